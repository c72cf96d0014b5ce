package supply

import (
	"context"
	"sort"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
)

// languageStore is the storage of the country languages' abbreviations the hosted pages
// show: a subset of persistence's CatalogStore.
type languageStore interface {
	CountryLanguageAbbrs(ctx context.Context) (map[int32]string, error)
}

// pageCountry is one country as the hosted profiler shows it: its questions in the
// country's first language (docs/rules.md §3: the same question_id means the same concept in
// every country language).
type pageCountry struct {
	id        int32
	iso       string
	name      string // in the country's first language
	lang      string // that language's tag, e.g. de-DE
	questions []pageQuestion
}

// pageQuestion is a catalog question with its texts, checked by the impanel's validation.
type pageQuestion struct {
	q       *question
	text    string
	kind    string
	answers []persistence.CatalogAnswer
}

// pageCatalog is the profiler's view of the catalog, built once at start.
type pageCatalog struct {
	countries []*pageCountry // by id
	byID      map[int32]*pageCountry
	byISO     map[string]*pageCountry
}

// nativeNames are country names in the country's first language; others keep the
// catalog's name.
var nativeNames = map[string]string{"DE": "Deutschland", "FR": "France"}

func newPageCatalog(src *persistence.Catalog, cat *catalog, abbrs map[int32]string) *pageCatalog {
	pc := &pageCatalog{byID: map[int32]*pageCountry{}, byISO: map[string]*pageCountry{}}
	for _, co := range src.Countries {
		cc := cat.byCountry[co.ID]
		if cc == nil || len(co.CountryLanguageIDs) == 0 {
			continue
		}
		first := co.CountryLanguageIDs[0]
		c := &pageCountry{id: co.ID, iso: co.ISOCode, name: co.Name, lang: abbrs[first]}
		if n, ok := nativeNames[co.ISOCode]; ok {
			c.name = n
		}
		if c.lang == "" {
			c.lang = pagekit.DefaultLang
		}
		for _, q := range src.Questions[first] {
			vq := cc.questions[q.QuestionID]
			if vq == nil {
				continue
			}
			pq := pageQuestion{q: vq, text: q.QuestionText, answers: q.Answers}
			switch {
			case q.QuestionID == engine.QuestionAge:
				pq.kind = pagekit.KindAge
			case q.QuestionID == engine.QuestionZip:
				pq.kind = pagekit.KindZip
			case q.AnswerType == answerSingle:
				pq.kind = pagekit.KindSingle
			case q.AnswerType == answerMulti:
				pq.kind = pagekit.KindMulti
			default:
				pq.kind = pagekit.KindText
			}
			c.questions = append(c.questions, pq)
		}
		pc.countries = append(pc.countries, c)
		pc.byID[c.id] = c
		pc.byISO[c.iso] = c
	}
	sort.Slice(pc.countries, func(i, j int) bool { return pc.countries[i].id < pc.countries[j].id })
	return pc
}
