package quality

import (
	"strconv"

	"github.com/switchboard/switchboard/internal/httpio"
)

func (q *Service) statsOf(pub int64) *publisherStats {
	if v, ok := q.stats.Load(pub); ok {
		return v.(*publisherStats)
	}
	v, _ := q.stats.LoadOrStore(pub, new(publisherStats))
	return v.(*publisherStats)
}

// RegisterMetrics adds the quality families to m, labelled by publisher.
func (q *Service) RegisterMetrics(m *httpio.Metrics) {
	if q == nil {
		return
	}
	counter := func(name, help string, f func(*publisherStats) int64) {
		m.Gauge(name, "counter", help, func() []httpio.Sample {
			var out []httpio.Sample
			q.stats.Range(func(k, v any) bool {
				out = append(out, httpio.Sample{Labels: `publisher="` + strconv.FormatInt(k.(int64), 10) + `"`,
					Value: float64(f(v.(*publisherStats)))})
				return true
			})
			return out
		})
	}
	counter("switchboard_quality_blocks_total", "Participants blocked for quality by this process, by publisher.",
		func(s *publisherStats) int64 { return s.blocks.Load() })
	counter("switchboard_quality_speeders_total", "Completes marked as speeders by this process, by publisher.",
		func(s *publisherStats) int64 { return s.speeders.Load() })
	counter("switchboard_quality_duplicates_total", "Duplicate-identity signals (shared devices, several countries) recorded by this process, by publisher.",
		func(s *publisherStats) int64 { return s.duplicates.Load() })
	counter("switchboard_quality_ip_mismatches_total", "GET /campaigns answers refused because the IP is in another country than the participant's, by publisher.",
		func(s *publisherStats) int64 { return s.ipMismatches.Load() })
	m.Gauge("switchboard_quality_blocked_participants", "gauge", "Participants blocked now, by publisher (every process holds the same set).",
		func() []httpio.Sample {
			now := q.now()
			per := map[int64]int{}
			for _, e := range q.blocks.Load().byID {
				if now < e.until {
					per[e.publisher]++
				}
			}
			out := make([]httpio.Sample, 0, len(per))
			for pub, n := range per {
				out = append(out, httpio.Sample{Labels: `publisher="` + strconv.FormatInt(pub, 10) + `"`, Value: float64(n)})
			}
			return out
		})
}
