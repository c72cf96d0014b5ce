package httpio

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Throttle is one client's rate limit: Rate events a second on average with bursts up to
// Burst, kept as a single atomic "theoretical arrival time" (the generic cell rate
// algorithm). Allow takes no lock and allocates nothing, so it suits the supply hot path,
// where every request of a publisher passes through its one Throttle.
type Throttle struct {
	interval int64 // nanoseconds per event
	window   int64 // interval × burst: how far ahead of now the arrival time may run
	tat      atomic.Int64
}

// NewThrottle returns a limit of rate events a second with bursts up to burst (at least 1);
// rate <= 0 returns nil, which allows everything.
func NewThrottle(rate float64, burst int) *Throttle {
	if rate <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	interval := int64(float64(time.Second) / rate)
	if interval < 1 {
		interval = 1
	}
	return &Throttle{interval: interval, window: interval * int64(burst)}
}

// Allow takes one event at now. When the limit is reached it returns false and how long
// until the next event would be allowed.
func (t *Throttle) Allow(now time.Time) (bool, time.Duration) {
	if t == nil {
		return true, 0
	}
	n := now.UnixNano()
	for {
		tat := t.tat.Load()
		next := max(tat, n) + t.interval
		if ahead := next - n; ahead > t.window {
			return false, time.Duration(ahead - t.window)
		}
		if t.tat.CompareAndSwap(tat, next) {
			return true, 0
		}
	}
}

// SetRetryAfter sets the Retry-After header to wait rounded up to whole seconds (at least
// one), the form clients of a 429 expect.
func SetRetryAfter(ctx *fasthttp.RequestCtx, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	var b [20]byte
	ctx.Response.Header.SetBytesV("Retry-After", strconv.AppendInt(b[:0], int64(secs), 10))
}
