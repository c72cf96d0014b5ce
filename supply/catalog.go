package supply

import (
	"encoding/json"
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// Answer types of the catalog (docs/rules.md §3).
const (
	answerSingle = 0
	answerMulti  = 1
	answerText   = 5
)

// question is one question of a country's catalog, as impanel validates against it.
type question struct {
	id         int32
	name       string
	answerType int16
	required   bool
	preCodes   map[int32]bool
}

// countryCatalog is the catalog of one country in its primary language.
type countryCatalog struct {
	id        int32
	questions map[int32]*question
	required  []*question // in display order
	qualsJSON []byte      // the GET /qualifications answer
}

// catalog is the reference data the interface serves, encoded once at start.
type catalog struct {
	countriesJSON []byte
	byCountry     map[int32]*countryCatalog
}

type countryOut struct {
	ID                 int32   `json:"id"`
	Name               string  `json:"name"`
	ISOCode            string  `json:"iso_code"`
	CountryLanguageIDs []int32 `json:"country_language_ids"`
}

type qualOut struct {
	QuestionID           int32       `json:"question_id"`
	QuestionText         string      `json:"question_text"`
	CountryID            int32       `json:"country_id"`
	Name                 string      `json:"name"`
	AnswerType           string      `json:"answer_type"`
	QualificationAnswers []answerOut `json:"qualification_answers"`
	Required             bool        `json:"required"`
}

type answerOut struct {
	OptionText string `json:"option_text"`
	PreCode    int32  `json:"pre_code"`
}

func answerTypeName(t int16) string {
	switch t {
	case answerSingle:
		return "Single select"
	case answerMulti:
		return "Multi select"
	default:
		return "Text"
	}
}

func newCatalog(src *persistence.Catalog) (*catalog, error) {
	c := &catalog{byCountry: map[int32]*countryCatalog{}}
	countries := make([]countryOut, 0, len(src.Countries))
	for _, co := range src.Countries {
		ids := co.CountryLanguageIDs
		if ids == nil {
			ids = []int32{}
		}
		countries = append(countries, countryOut{ID: co.ID, Name: co.Name, ISOCode: co.ISOCode, CountryLanguageIDs: ids})
		cc := &countryCatalog{id: co.ID, questions: map[int32]*question{}}
		quals := []qualOut{}
		if len(ids) > 0 {
			for _, q := range src.Questions[ids[0]] { // the primary language
				qq := &question{id: q.QuestionID, name: q.Name, answerType: q.AnswerType, required: q.Required, preCodes: map[int32]bool{}}
				answers := make([]answerOut, 0, len(q.Answers))
				for _, an := range q.Answers {
					qq.preCodes[an.PreCode] = true
					answers = append(answers, answerOut{OptionText: an.OptionText, PreCode: an.PreCode})
				}
				cc.questions[q.QuestionID] = qq
				if q.Required {
					cc.required = append(cc.required, qq)
				}
				quals = append(quals, qualOut{QuestionID: q.QuestionID, QuestionText: q.QuestionText, CountryID: co.ID,
					Name: q.Name, AnswerType: answerTypeName(q.AnswerType), QualificationAnswers: answers, Required: q.Required})
			}
		}
		b, err := json.Marshal(quals)
		if err != nil {
			return nil, err
		}
		cc.qualsJSON = b
		c.byCountry[co.ID] = cc
	}
	b, err := json.Marshal(countries)
	if err != nil {
		return nil, err
	}
	c.countriesJSON = b
	return c, nil
}

func writeRaw(ctx *fasthttp.RequestCtx, body []byte) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(httpio.ContentTypeJSON)
	ctx.Response.SetBody(body)
}

func (a *API) fail(ctx *fasthttp.RequestCtx, err error) {
	httpio.WriteError(ctx, a.log, httpio.StyleError, err)
}

// countries answers GET /countries from memory.
func (a *API) countries(ctx *fasthttp.RequestCtx) {
	if _, err := a.authenticate(ctx); err != nil {
		a.fail(ctx, err)
		return
	}
	writeRaw(ctx, a.catalog.countriesJSON)
}

// qualifications answers GET /qualifications?country_id= from memory, in the country's
// primary language. A missing or malformed country_id is a 400, an unknown one a 422.
func (a *API) qualifications(ctx *fasthttp.RequestCtx) {
	if _, err := a.authenticate(ctx); err != nil {
		a.fail(ctx, err)
		return
	}
	raw := ctx.QueryArgs().Peek("country_id")
	if len(raw) == 0 {
		a.fail(ctx, fault.BadRequest("country_id is required"))
		return
	}
	id, err := strconv.ParseInt(string(raw), 10, 32)
	if httpio.IsRangeError(err) {
		a.fail(ctx, fault.BadRequest("country_id %s", httpio.OutOfRange))
		return
	}
	if err != nil {
		a.fail(ctx, fault.BadRequest("country_id must be an integer"))
		return
	}
	cc := a.catalog.byCountry[int32(id)]
	if cc == nil {
		a.fail(ctx, fault.Invalid("country_id", "is not a supported country (see /countries)"))
		return
	}
	writeRaw(ctx, cc.qualsJSON)
}
