package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// serverCounts are the counters of the server's /metrics a phase reads before and after
// itself.
type serverCounts struct {
	verdicts               map[string]float64 // switchboard_entries_total by its labels; nil: not read
	cacheHits, cacheMisses float64            // switchboard_offers_cache_{hits,misses}_total
	// switchboard_sweeps_total, switchboard_sweep_seconds_total and
	// switchboard_sweep_release_seconds_total
	sweeps, sweepSeconds, releaseSeconds float64
}

// scrapeCounts reads the server's /metrics (verdicts nil when it cannot).
func scrapeCounts(c *fasthttp.HostClient, addr string) serverCounts {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("/metrics")
	req.Header.SetHost(addr)
	if err := c.DoTimeout(req, resp, 10*time.Second); err != nil || resp.StatusCode() != fasthttp.StatusOK {
		return serverCounts{}
	}
	text := string(resp.Body())
	return serverCounts{verdicts: parseVerdicts(text), cacheHits: parseCounter(text, "switchboard_offers_cache_hits_total"),
		cacheMisses: parseCounter(text, "switchboard_offers_cache_misses_total"), sweeps: parseCounter(text, "switchboard_sweeps_total"),
		sweepSeconds: parseCounter(text, "switchboard_sweep_seconds_total"), releaseSeconds: parseCounter(text, "switchboard_sweep_release_seconds_total")}
}

// parseCounter returns the value of the unlabelled sample name in a Prometheus text
// exposition (0 when absent).
func parseCounter(text, name string) float64 {
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

// parseVerdicts picks the switchboard_entries_total samples out of a Prometheus text
// exposition: `switchboard_entries_total{verdict="refused",by="database",reason="quota"} 12`
// becomes "refused by database (quota)": 12.
func parseVerdicts(text string) map[string]float64 {
	const name = "switchboard_entries_total{"
	out := map[string]float64{}
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for kv := range strings.SplitSeq(labels, ",") {
			if k, val, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(val, `"`)
			}
		}
		key := l["verdict"]
		if l["by"] != "" {
			key += " by " + l["by"] + " (" + l["reason"] + ")"
		}
		out[key] += v
	}
	return out
}

// describeVerdicts renders verdicts as "admitted 123, refused by engine (not_eligible) 4".
func describeVerdicts(m map[string]float64) string {
	if m == nil {
		return "not read"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
