package supply

import "github.com/switchboard/switchboard/internal/httpio"

// RegisterMetrics adds the supply interface's families to m: the GET /campaigns answer
// cache (campaigns.go).
func (a *API) RegisterMetrics(m *httpio.Metrics) {
	ac := a.cache
	one := func(v float64) []httpio.Sample { return []httpio.Sample{{Value: v}} }
	m.Gauge("switchboard_service_key_lookups_total", "counter",
		"Reloads of the service keys for a token under a key id this process did not hold (a rotation not heard of yet, or a forgery); at most ten a second.",
		func() []httpio.Sample { return one(float64(a.key.Lookups())) })
	m.Gauge("switchboard_offers_cache_hits_total", "counter",
		"GET /campaigns answers served from the answer cache.",
		func() []httpio.Sample { return one(float64(ac.hits.Load())) })
	m.Gauge("switchboard_offers_cache_misses_total", "counter",
		"GET /campaigns answers computed because the cache held no current answer (absent, or its participant or campaigns changed).",
		func() []httpio.Sample { return one(float64(ac.misses.Load())) })
	m.Gauge("switchboard_offers_cache_evictions_total", "counter",
		"Answers that left the cache: written over for room, or dropped when their participant changed.",
		func() []httpio.Sample {
			if ac.ring == nil {
				return one(0)
			}
			return one(float64(ac.ring.Stats().Evictions))
		})
	m.Gauge("switchboard_offers_cache_size_bytes", "gauge",
		"Bytes of the cache's rings in use (answers current, expired and written over alike; at most the cache budget).",
		func() []httpio.Sample {
			if ac.ring == nil {
				return one(0)
			}
			return one(float64(ac.ring.Stats().Bytes))
		})
	m.Gauge("switchboard_offers_cache_window_seconds", "gauge",
		"How long an answer cached now stays before the cache's rings write over it, in whole seconds at the last second's rate (at most the TTL): a participant who asks again less often is not cached.",
		func() []httpio.Sample { return one(float64(ac.window.Load())) })
}
