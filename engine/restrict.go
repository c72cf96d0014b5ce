package engine

import (
	"slices"
	"strings"
)

// restrictions holds the per-respondent rules of a campaign (exclusions of
// participants and of supply partners, retargeting lists, docs/rules.md §5.5–6).
// Most campaigns have none and carry a nil pointer. Every list is sorted for
// binary search.
type restrictions struct {
	excluded  []int64      // participant ids
	suppliers []int64      // excluded publisher ids
	byID      []idExpiry   // retarget kinds 0 and 1
	byDevice  []textExpiry // retarget kind 2, raw device identifier
	byHash    []textExpiry // retarget kind 3, upper-case hex SHA-1
	lastUntil int64        // latest ExpiresAt: restricted while now < lastUntil
}

type idExpiry struct {
	id    int64
	until int64
}

type textExpiry struct {
	text  string
	until int64
}

// newRestrictions compiles a campaign's exclusions and retargets, or returns
// nil when it has neither.
func newRestrictions(c *Campaign) *restrictions {
	if len(c.ExcludedParticipants) == 0 && len(c.ExcludedSuppliers) == 0 && len(c.Retargets) == 0 {
		return nil
	}
	r := &restrictions{excluded: slices.Clone(c.ExcludedParticipants), suppliers: slices.Clone(c.ExcludedSuppliers)}
	slices.Sort(r.excluded)
	slices.Sort(r.suppliers)
	for _, t := range c.Retargets {
		r.lastUntil = max(r.lastUntil, t.ExpiresAt)
		switch t.Kind {
		case RetargetTransaction, RetargetRespondent:
			if t.ParticipantID != 0 {
				r.byID = append(r.byID, idExpiry{t.ParticipantID, t.ExpiresAt})
			}
		case RetargetDevice:
			if t.Value != "" {
				r.byDevice = append(r.byDevice, textExpiry{t.Value, t.ExpiresAt})
			}
		case RetargetHashedDevice:
			if t.Value != "" {
				r.byHash = append(r.byHash, textExpiry{strings.ToUpper(t.Value), t.ExpiresAt})
			}
		}
	}
	slices.SortFunc(r.byID, func(a, b idExpiry) int { return cmpInt64(a.id, b.id) })
	slices.SortFunc(r.byDevice, func(a, b textExpiry) int { return strings.Compare(a.text, b.text) })
	slices.SortFunc(r.byHash, func(a, b textExpiry) int { return strings.Compare(a.text, b.text) })
	return r
}

// admits reports whether the participant passes the campaign's exclusions (its
// own, and its supply partner's) and, while the campaign has an unexpired retarget record, is on its list.
func (r *restrictions) admits(p *Participant, now int64) bool {
	if _, found := slices.BinarySearch(r.excluded, p.ID); found {
		return false
	}
	if _, found := slices.BinarySearch(r.suppliers, p.PublisherID); found {
		return false
	}
	if now >= r.lastUntil {
		return true // no retarget record, or all expired
	}
	return idListed(r.byID, p.ID, now) ||
		(p.DeviceID != "" && textListed(r.byDevice, p.DeviceID, now)) ||
		(p.DeviceIDHash != "" && textListed(r.byHash, p.DeviceIDHash, now))
}

func idListed(l []idExpiry, id int64, now int64) bool {
	i, _ := slices.BinarySearchFunc(l, id, func(e idExpiry, id int64) int { return cmpInt64(e.id, id) })
	for ; i < len(l) && l[i].id == id; i++ {
		if now < l[i].until {
			return true
		}
	}
	return false
}

func textListed(l []textExpiry, s string, now int64) bool {
	i, _ := slices.BinarySearchFunc(l, s, func(e textExpiry, s string) int { return strings.Compare(e.text, s) })
	for ; i < len(l) && l[i].text == s; i++ {
		if now < l[i].until {
			return true
		}
	}
	return false
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
