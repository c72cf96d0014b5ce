package payout

import (
	"slices"
	"strconv"
	"sync"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// lags is each partner's postback backlog as /metrics shows it: how many postbacks are
// pending and how long the oldest has waited (the partner's delivery lag), over the whole
// table, refreshed with the other gauges. A partner once seen with pending postbacks stays
// listed, at 0 when it has none, so that a lag is seen to end.
type lags struct {
	mu sync.Mutex
	by map[int64]persistence.Backlog // by publisher id
}

// set takes the backlogs of a stats refresh.
func (l *lags) set(backlogs []persistence.Backlog) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[int64]persistence.Backlog{}
	}
	for id, b := range l.by {
		l.by[id] = persistence.Backlog{Destination: b.Destination}
	}
	for _, b := range backlogs {
		if b.PublisherID != 0 {
			l.by[b.PublisherID] = b
		}
	}
}

// samples reads one figure of every partner, labelled publisher="<id>", by id.
func (l *lags) samples(figure func(persistence.Backlog) float64) []httpio.Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int64, 0, len(l.by))
	for id := range l.by {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]httpio.Sample, len(ids))
	for i, id := range ids {
		out[i] = httpio.Sample{Labels: `publisher="` + strconv.FormatInt(id, 10) + `"`, Value: figure(l.by[id])}
	}
	return out
}

// register exposes the partners' lags and backlogs.
func (l *lags) register(m *httpio.Metrics) {
	m.Gauge("switchboard_postbacks_partner_lag_seconds", "gauge",
		"Age of the oldest pending postback of each partner (its delivery lag; 0 once none is pending).",
		func() []httpio.Sample {
			return l.samples(func(b persistence.Backlog) float64 { return b.Oldest.Seconds() })
		})
	m.Gauge("switchboard_postbacks_partner_pending", "gauge", "Pending postbacks of each partner.",
		func() []httpio.Sample {
			return l.samples(func(b persistence.Backlog) float64 { return float64(b.Pending) })
		})
}
