package router

import (
	"sync/atomic"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// Who refused an entry: the router itself (a participant or campaign it cannot find), the
// engine's in-memory mirror of the counts, or the database arbiter, which has the last word.
const (
	refusedByRouter = iota
	refusedByEngine
	refusedByDatabase
)

// databaseRefusals are the arbiter's reasons, in the order of verdicts.database.
var databaseRefusals = [...]string{persistence.RefusedStatus, persistence.RefusedQuota, persistence.RefusedDaily,
	persistence.RefusedExcluded, persistence.RefusedReentry, persistence.RefusedRelated}

// verdicts counts this process's entry decisions for /metrics, so that an operator can
// tell a market with no room (quota, daily) from rules at work (reentry, related) and from
// an engine mirror that lags the database (refusals by the database that the engine let
// through).
type verdicts struct {
	admitted         atomic.Uint64
	resumed          atomic.Uint64 // an offer's session in progress answered again
	unknown          atomic.Uint64 // participant or campaign not found
	engine           atomic.Uint64
	database         [len(databaseRefusals)]atomic.Uint64
	databaseUnlisted atomic.Uint64 // a reason this build does not list
}

// refused counts a refusal by who (refusedBy*), with the database's reason.
func (v *verdicts) refused(by int, reason string) {
	switch by {
	case refusedByRouter:
		v.unknown.Add(1)
	case refusedByEngine:
		v.engine.Add(1)
	default:
		for i, r := range databaseRefusals {
			if r == reason {
				v.database[i].Add(1)
				return
			}
		}
		v.databaseUnlisted.Add(1)
	}
}

// RegisterMetrics exposes the entry decisions of this process on /metrics as
// switchboard_entries_total{verdict, by, reason}, its re-routing chains (reroute.go)
// and its overage completes.
func (r *Router) RegisterMetrics(m *httpio.Metrics) {
	r.registerRerouteMetrics(m)
	m.Gauge("switchboard_overage_completes_total", "counter",
		"Late completes this process stored as overages: their quotas or the day's max_daily_completes had no room, the partner is paid and the buyer not charged (docs/rules.md §5).",
		func() []httpio.Sample { return []httpio.Sample{{Value: float64(r.overages.Load())}} })
	v := &r.verdicts
	m.Gauge("switchboard_entries_total", "counter",
		"Entries this process decided: admitted, resumed (an offer link followed again while its session is in progress), or refused and by whom (router, engine mirror, database arbiter with its reason).",
		func() []httpio.Sample {
			out := []httpio.Sample{
				{Labels: `verdict="admitted"`, Value: float64(v.admitted.Load())},
				{Labels: `verdict="resumed"`, Value: float64(v.resumed.Load())},
				{Labels: `verdict="refused",by="router",reason="unknown"`, Value: float64(v.unknown.Load())},
				{Labels: `verdict="refused",by="engine",reason="not_eligible"`, Value: float64(v.engine.Load())},
			}
			for i, reason := range databaseRefusals {
				out = append(out, httpio.Sample{Labels: `verdict="refused",by="database",reason="` + reason + `"`,
					Value: float64(v.database[i].Load())})
			}
			return append(out, httpio.Sample{Labels: `verdict="refused",by="database",reason="other"`,
				Value: float64(v.databaseUnlisted.Load())})
		})
}
