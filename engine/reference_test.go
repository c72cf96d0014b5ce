package engine_test

import (
	"slices"
	"strings"

	"github.com/switchboard/switchboard/engine"
)

// This file holds the brute-force reference matcher: it walks every campaign
// and every quota of a plain []Campaign and applies docs/rules.md §5 literally,
// sharing no code with the engine except the exported input types, counter
// reads, NormalizeText and HashDeviceID.

// refResult is what the reference decides for one campaign.
type refResult struct {
	ok     bool
	quotas []int64 // every matching quota id (ok or not)
}

func refConditionMatches(c engine.Condition, p *engine.Participant) bool {
	for _, a := range p.Answers {
		if a.QuestionID != c.QuestionID {
			continue
		}
		for _, x := range a.Codes {
			for _, y := range c.Codes {
				if x == y {
					return true
				}
			}
		}
		if a.Text != "" {
			for _, t := range c.Texts {
				if engine.NormalizeText(t) == engine.NormalizeText(a.Text) {
					return true
				}
			}
		}
	}
	return false
}

func refQuotaMatches(q engine.Quota, p *engine.Participant) bool {
	for _, c := range q.Conditions {
		if !refConditionMatches(c, p) {
			return false
		}
	}
	return true
}

func refQuotaFull(q engine.Quota, v engine.QuotaCounts) bool {
	if q.ClickBalanced {
		return v.Entries >= int64(q.NumRespondents)
	}
	inProgress := v.InProgress
	if inProgress < 0 {
		inProgress = 0
	}
	return v.Completes >= int64(q.NumRespondents) || v.Completes+inProgress >= int64(q.NumRespondents)
}

func refCampaign(c *engine.Campaign, ctr *engine.Counters, p *engine.Participant, now int64) refResult {
	var r refResult
	for _, q := range c.Quotas {
		if refQuotaMatches(q, p) {
			r.quotas = append(r.quotas, q.ID)
		}
	}
	if c.Status != engine.StatusActive || c.CountryID != p.CountryID {
		return r
	}
	if c.Devices != 0 && c.Devices&p.Device == 0 {
		return r
	}
	open := false
	for _, q := range c.Quotas {
		if !refQuotaMatches(q, p) {
			continue
		}
		full := refQuotaFull(q, ctr.Quota(q.ID))
		if q.Global && full {
			return r
		}
		if !q.Global && !full {
			open = true
		}
	}
	if !open {
		return r
	}
	if slices.Contains(c.ExcludedParticipants, p.ID) || slices.Contains(c.ExcludedSuppliers, p.PublisherID) {
		return r
	}
	for _, e := range p.Entries {
		if e.CampaignID == c.ID {
			switch {
			case c.ReentryMinutes < 0:
				return r
			case c.ReentryMinutes > 0 && now-e.At < int64(c.ReentryMinutes)*60:
				return r
			}
		} else if slices.Contains(c.Related, e.CampaignID) {
			return r
		}
	}
	restricted, listed := false, false
	for _, t := range c.Retargets {
		if now >= t.ExpiresAt {
			continue
		}
		restricted = true
		switch t.Kind {
		case 0, 1:
			listed = listed || (t.ParticipantID != 0 && t.ParticipantID == p.ID)
		case 2:
			listed = listed || (p.DeviceID != "" && t.Value == p.DeviceID)
		case 3:
			listed = listed || (p.DeviceID != "" && strings.EqualFold(t.Value, engine.HashDeviceID(p.DeviceID)))
		}
	}
	if restricted && !listed {
		return r
	}
	if c.MaxDailyCompletes > 0 && ctr.Campaign(c.ID, now).DayCompletes >= int64(c.MaxDailyCompletes) {
		return r
	}
	r.ok = true
	return r
}

// refMatch returns every eligible campaign, ranked by EPC descending then
// campaign id ascending.
func refMatch(cs []engine.Campaign, ctr *engine.Counters, p *engine.Participant, share float64, now int64) []engine.Offer {
	var out []engine.Offer
	for i := range cs {
		c := &cs[i]
		if !refCampaign(c, ctr, p, now).ok {
			continue
		}
		k := ctr.Campaign(c.ID, now)
		conv := (float64(k.Completes) + 20*(float64(c.Incidence)/100)) / (float64(max(k.Sessions, 0)) + 20)
		conv = min(max(conv, 0), 1)
		out = append(out, engine.Offer{
			CampaignID: c.ID, BuyerID: c.BuyerID, CPICents: c.CPICents, LOI: c.LOI, Incidence: c.Incidence,
			Conversion: conv, EPC: float64(c.CPICents) / 100 * share * conv,
		})
		out[len(out)-1].Score = out[len(out)-1].EPC
	}
	slices.SortFunc(out, func(a, b engine.Offer) int {
		switch {
		case a.EPC > b.EPC:
			return -1
		case a.EPC < b.EPC:
			return 1
		}
		return int(a.CampaignID - b.CampaignID)
	})
	return out
}
