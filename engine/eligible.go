package engine

import "slices"

// Eligible re-checks, at entry, whether the participant may enter one
// campaign at now under every rule of docs/rules.md §5, against live counters. On
// success it appends to dst the ids of every quota that matches the
// participant (global ones included): the quotas the session counts toward.
// On failure it returns dst unchanged and false.
func (e *Engine) Eligible(p *Participant, campaignID int64, now int64, dst []int64) ([]int64, bool) {
	return e.snap.Load().Eligible(p, campaignID, now, dst)
}

// Eligible is Engine.Eligible against this snapshot.
func (s *Snapshot) Eligible(p *Participant, campaignID int64, now int64, dst []int64) ([]int64, bool) {
	ctry := s.parts[p.CountryID]
	if ctry == nil {
		return dst, false
	}
	part, slot, ok := ctry.slot(campaignID)
	if !ok {
		return dst, false
	}
	cm, cold := &part.camps[slot], &part.cold[slot]
	if cm.devices != 0 && cm.devices&p.Device == 0 {
		return dst, false
	}
	if at, entered := p.lastEntry(cold.id); entered && reentryBlocks(cold.reentry, at, now) {
		return dst, false
	}
	for _, r := range cold.def.Related {
		if _, entered := p.lastEntry(r); entered && r != cold.id {
			return dst, false
		}
	}
	if cold.restriction != nil && !cold.restriction.admits(p, now) {
		return dst, false
	}
	if cm.maxDaily > 0 && cm.counter.dailyOn(utcDay(now)) >= int64(cm.maxDaily) {
		return dst, false
	}
	n := len(dst)
	open := false
	for q := cm.q0; q < cm.q1; q++ {
		qm, def := &part.quotas[q], part.qdefs[q]
		if !quotaMatches(def, p) {
			continue
		}
		full := qm.counter.full(qm.num, qm.clickBalanced)
		if qm.global && full {
			return dst[:n], false
		}
		open = open || (!qm.global && !full)
		dst = append(dst, def.ID)
	}
	if !open {
		return dst[:n], false
	}
	return dst, true
}

// quotaMatches evaluates a quota directly: every condition must match.
func quotaMatches(q *Quota, p *Participant) bool {
	for i := range q.Conditions {
		if !conditionMatches(&q.Conditions[i], p) {
			return false
		}
	}
	return true
}

// conditionMatches reports whether any answer of the participant to the
// condition's question shares a code with it or has one of its texts.
func conditionMatches(c *Condition, p *Participant) bool {
	i, _ := slices.BinarySearchFunc(p.Answers, c.QuestionID, func(a Answer, q int32) int { return int(a.QuestionID) - int(q) })
	for ; i < len(p.Answers) && p.Answers[i].QuestionID == c.QuestionID; i++ {
		a := &p.Answers[i]
		for _, code := range a.Codes {
			if slices.Contains(c.Codes, code) {
				return true
			}
		}
		if a.Text != "" {
			for t := range c.textValues() {
				if NormalizeText(t) == a.Text {
					return true
				}
			}
		}
	}
	return false
}
