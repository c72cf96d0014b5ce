package quality

import (
	"net/netip"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/identity"
)

// Refusal returns the answer of GET /campaigns for a participant who may not get offers
// (blocked: reason 1; IP in another country: reason 3), or nil. It reads memory only.
func (q *Service) Refusal(pub int64, user []byte, p *engine.Participant, ip netip.Addr, now int64) []byte {
	if q == nil {
		return nil
	}
	if set := q.blocks.Load(); len(set.byID) > 0 {
		var e *blockEntry
		if p != nil {
			e = set.byID[p.ID]
		} else {
			e = set.byUser[userKey{pub, identity.View(user)}]
		}
		if e != nil && now < e.until {
			return q.blockedBodies[e.class]
		}
	}
	if q.geo != nil && p != nil {
		if want := q.countryISO[p.CountryID]; want != "" {
			if got, ok := q.geo.country(ip); ok && got != want {
				q.statsOf(pub).ipMismatches.Add(1)
				return ipMismatchBody
			}
		}
	}
	return nil
}

var ipMismatchBody = []byte(`{"surveys":[],"player_eligibility":{"is_eligible":false,"reason":3,"comment":"country not served: the IP address is in another country"}}`)

// EntryBlocked reports whether an offer token issued at issuedAt (unix seconds) may not be
// used at now: its participant is blocked, or was blocked after the token was issued.
func (q *Service) EntryBlocked(participantID, issuedAt, now int64) bool {
	if q == nil {
		return false
	}
	set := q.blocks.Load()
	if len(set.byID) == 0 {
		return false
	}
	e := set.byID[participantID]
	return e != nil && (now < e.until || issuedAt <= e.blockedAt)
}

// Blocked reports whether the participant is blocked now, and for which rule class.
func (q *Service) Blocked(participantID int64) (string, bool) {
	if q == nil {
		return "", false
	}
	e := q.blocks.Load().byID[participantID]
	if e == nil || q.now() >= e.until {
		return "", false
	}
	return e.class, true
}
