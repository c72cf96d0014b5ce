package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Feasibility model constants; docs/feasibility.md explains the model.
const (
	// FeasibilityWindowDays is how far back a participant's activity counts.
	FeasibilityWindowDays = 30
	// DefaultDaysInField is used when a request gives no days_in_field.
	DefaultDaysInField = 5
	// referenceLOI is the interview length (minutes) below which length does
	// not reduce the share of respondents who finish.
	referenceLOI = 15
)

// FeasibilityRequest describes a campaign (or a would-be campaign) to
// estimate.
type FeasibilityRequest struct {
	CountryID   int32
	Incidence   int // percent
	LOI         int // minutes
	DaysInField int // 0 means DefaultDaysInField
	Quotas      []Quota
}

// FeasibilityResult is the estimate: a total and one entry per quota, in
// request order.
type FeasibilityResult struct {
	EstimatedCompletes int
	OverNumDays        int
	Quotas             []QuotaFeasibility
}

// QuotaFeasibility is the estimate of one quota, or Message when it cannot
// be estimated (the total is then 0).
type QuotaFeasibility struct {
	ID                 int64
	EstimatedCompletes int
	Message            string
}

// Feasibility estimates the completes a campaign can collect from the panel
// over its days in field. known tells whether a question id exists in the
// country's catalog (nil: every id is known); a quota naming an unknown one
// gets a message instead of an estimate and the total is 0. For every
// participant of the country active in the last FeasibilityWindowDays, its
// chance to show up during the field period comes from its own active days;
// a quota's estimate is the sum of those chances over the participants it
// matches, times incidence and a length-of-interview factor.
func Feasibility(req FeasibilityRequest, panel *Panel, now int64, known func(countryID, questionID int32) bool) FeasibilityResult {
	days := req.DaysInField
	if days <= 0 {
		days = DefaultDaysInField
	}
	res := FeasibilityResult{OverNumDays: days, Quotas: make([]QuotaFeasibility, len(req.Quotas))}
	quotas := make([]Quota, len(req.Quotas))
	unknown := false
	for i, q := range req.Quotas {
		res.Quotas[i].ID = q.ID
		if msg := unknownQuestions(req.CountryID, q, known); msg != "" {
			res.Quotas[i].Message = msg
			unknown = true
		}
		quotas[i] = normalizedQuota(q)
	}
	if unknown || panel == nil {
		return res
	}

	yield := float64(min(max(req.Incidence, 0), 100)) / 100 * loiFactor(req.LOI)
	reach := make([]float64, len(quotas)) // Σ chance over matching participants
	union := 0.0                          // over participants matching any non-global quota
	outside := make([]float64, len(quotas))
	since := now - FeasibilityWindowDays*secondsPerDay
	matched := make([]bool, len(quotas))
	panel.Range(func(p *Participant, a Activity) bool {
		if p.CountryID != req.CountryID || a.LastActive <= since {
			return true
		}
		chance := showUpChance(a.ActiveDays(now, FeasibilityWindowDays), days)
		admitted := false
		for i := range quotas {
			matched[i] = quotaMatches(&quotas[i], p)
			if matched[i] {
				reach[i] += chance
				admitted = admitted || !quotas[i].Global
			}
		}
		if !admitted {
			return true
		}
		union += chance
		for i := range quotas {
			if quotas[i].Global && !matched[i] {
				outside[i] += chance
			}
		}
		return true
	})

	total := union * yield
	sumNonGlobal := 0.0
	for i, q := range quotas {
		est := reach[i] * yield
		res.Quotas[i].EstimatedCompletes = int(est)
		if !q.Global {
			sumNonGlobal += min(est, float64(max(q.NumRespondents, 0)))
		}
	}
	total = min(total, sumNonGlobal)
	for i, q := range quotas {
		if q.Global {
			total = min(total, float64(max(q.NumRespondents, 0))+outside[i]*yield)
		}
	}
	res.EstimatedCompletes = int(total)
	return res
}

// showUpChance is the chance that a participant active on activeDays of the
// last FeasibilityWindowDays days is active at least once in the next days:
// 1 − (1 − rate)^days with rate its daily participation rate.
func showUpChance(activeDays, days int) float64 {
	rate := float64(max(activeDays, 1)) / FeasibilityWindowDays
	return 1 - math.Pow(1-min(rate, 1), float64(days))
}

// loiFactor is the share of qualified respondents expected to finish an
// interview of loi minutes: 1 up to referenceLOI, then sqrt(referenceLOI/loi).
func loiFactor(loi int) float64 {
	if loi <= referenceLOI {
		return 1
	}
	return math.Sqrt(float64(referenceLOI) / float64(loi))
}

// unknownQuestions returns the message for a quota naming question ids the
// country's catalog does not know, or "".
func unknownQuestions(country int32, q Quota, known func(countryID, questionID int32) bool) string {
	if known == nil {
		return ""
	}
	var ids []string
	var seen []int32
	for _, c := range q.Conditions {
		if !known(country, c.QuestionID) && !slices.Contains(seen, c.QuestionID) {
			seen = append(seen, c.QuestionID)
			ids = append(ids, fmt.Sprint(c.QuestionID))
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return "We can't estimate feasibility for question ids: ( " + strings.Join(ids, ", ") + " )"
}

// normalizedQuota copies q with its texts normalized, so that evaluating it
// against many participants never normalizes again.
func normalizedQuota(q Quota) Quota {
	q.Conditions = slices.Clone(q.Conditions)
	for i := range q.Conditions {
		var texts []string
		for t := range q.Conditions[i].textValues() {
			texts = append(texts, NormalizeText(t))
		}
		q.Conditions[i].Texts, q.Conditions[i].packed = texts, ""
	}
	return q
}
