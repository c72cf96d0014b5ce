package admin

import (
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard/switchboard/persistence"
)

// A campaign's page says whom it targets in words: each quota's conditions (question and
// the answers that qualify, ages as ranges), its custom screeners and the suppliers whose
// participants it never admits.

// maxConditionValues is how many text values (ZIP codes) a condition lists before "and N more".
const maxConditionValues = 20

// condition is one targeting condition in words.
type condition struct {
	Question string // the question's name, as people read it ("Household income")
	Text     string // the question as asked
	Answers  string // the answers that qualify
}

// questionLabel turns a catalog name (HOUSEHOLD_INCOME) into words (Household income).
func questionLabel(name string) string {
	s := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "_", " "))
	if s == "" {
		return s
	}
	if s == "zip" {
		return "ZIP code"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ageRanges writes ages as ranges: 18–34, 50, 65–99.
func ageRanges(codes []int) string {
	ages := slices.Clone(codes)
	slices.Sort(ages)
	ages = slices.Compact(ages)
	var parts []string
	for i := 0; i < len(ages); {
		j := i
		for j+1 < len(ages) && ages[j+1] == ages[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, strconv.Itoa(ages[i])+"–"+strconv.Itoa(ages[j]))
		} else {
			parts = append(parts, strconv.Itoa(ages[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// orList joins words as "A", "A or B", "A, B or C".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// conditionWords says a condition on question qid with codes (select answers, ages) or
// texts (ZIP codes), t its question's texts when known.
func conditionWords(qid int, codes []int, texts []string, t persistence.QuestionText, known bool) condition {
	c := condition{Question: "Question " + strconv.Itoa(qid)}
	if known {
		c.Question, c.Text = questionLabel(t.Name), t.Text
	}
	switch {
	case len(texts) > 0:
		shown := texts[:min(len(texts), maxConditionValues)]
		c.Answers = strings.Join(shown, ", ")
		if n := len(texts) - len(shown); n > 0 {
			c.Answers += " and " + strconv.Itoa(n) + " more"
		}
	case qid == persistence.QuestionAge:
		c.Answers = ageRanges(codes)
	case len(codes) > 0:
		words := make([]string, 0, len(codes))
		for _, code := range codes {
			if w, ok := t.Answers[code]; ok {
				words = append(words, w)
			} else {
				words = append(words, "answer "+strconv.Itoa(code))
			}
		}
		c.Answers = orList(words)
	default:
		c.Answers = "any answer"
	}
	return c
}

// targetingQuestions is every question a campaign's quotas and screeners ask.
func targetingQuestions(c persistence.CampaignDetail) []int {
	var ids []int
	for _, q := range c.CampaignQuotas {
		for _, cq := range q.CampaignQualifications {
			ids = append(ids, cq.QuestionID)
		}
	}
	for _, cq := range c.CustomCampaignQualifications {
		ids = append(ids, cq.QuestionID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// quotaConditions says a quota's conditions in words, in its order.
func quotaConditions(q persistence.Quota, texts map[int]persistence.QuestionText) []condition {
	out := make([]condition, 0, len(q.CampaignQualifications))
	for _, cq := range q.CampaignQualifications {
		t, ok := texts[cq.QuestionID]
		out = append(out, conditionWords(cq.QuestionID, cq.PreCodes, cq.TextValues, t, ok))
	}
	return out
}

// excludedSupplier is a supplier a campaign keeps away, by name.
type excludedSupplier struct {
	ID   int64
	Name string
}

// excludedSuppliers names the campaign's excluded suppliers (an id no longer listed keeps
// its number).
func excludedSuppliers(ids []int64, all []persistence.Supplier) []excludedSupplier {
	out := make([]excludedSupplier, 0, len(ids))
	for _, id := range ids {
		e := excludedSupplier{ID: id, Name: "Supplier " + strconv.FormatInt(id, 10)}
		if i := slices.IndexFunc(all, func(s persistence.Supplier) bool { return s.ID == id }); i >= 0 {
			e.Name = all[i].Name
		}
		out = append(out, e)
	}
	return out
}
