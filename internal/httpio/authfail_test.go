package httpio

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func ctxFrom(ip string) *fasthttp.RequestCtx {
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.ParseIP(ip), Port: 1234}, nil)
	return &ctx
}

func TestThrottle(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	th := NewThrottle(10, 3)
	for i := range 3 {
		if ok, _ := th.Allow(now); !ok {
			t.Fatalf("event %d of the burst refused", i+1)
		}
	}
	ok, wait := th.Allow(now)
	if ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("past the burst: %v, wait %v; want refused, wait ≤ 100ms", ok, wait)
	}
	if ok, _ := th.Allow(now.Add(100 * time.Millisecond)); !ok {
		t.Fatal("refused after one interval")
	}
	if ok, _ := (*Throttle)(nil).Allow(now); !ok {
		t.Fatal("a nil throttle refused")
	}
	if NewThrottle(0, 5) != nil || NewThrottle(-1, 5) != nil {
		t.Fatal("rate <= 0 must mean no limit")
	}
}

func TestThrottleConcurrent(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	th := NewThrottle(1, 100)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if ok, _ := th.Allow(now); ok {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if allowed != 100 {
		t.Fatalf("%d events allowed at one instant, want the burst of 100", allowed)
	}
}

func TestAuthFailures(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	f := NewAuthFailures(1, 3)
	bad, good := ctxFrom("203.0.113.7"), ctxFrom("203.0.113.8")
	for i := range 3 {
		if blocked, _ := f.Blocked(bad, now); blocked {
			t.Fatalf("blocked after %d failures", i)
		}
		f.Fail(bad, now)
	}
	blocked, wait := f.Blocked(bad, now)
	if !blocked || wait <= 0 || wait > time.Second {
		t.Fatalf("after the burst: blocked %v wait %v", blocked, wait)
	}
	if blocked, _ := f.Blocked(good, now); blocked {
		t.Fatal("another address blocked")
	}
	if blocked, _ := f.Blocked(bad, now.Add(time.Second)); blocked {
		t.Fatal("still blocked after a failure drained")
	}

	// IPv6 clients are counted per /64.
	for i := range 3 {
		f.Fail(ctxFrom(fmt.Sprintf("2001:db8:1:2::%x", i+1)), now)
	}
	if blocked, _ := f.Blocked(ctxFrom("2001:db8:1:2:ffff::9"), now); !blocked {
		t.Error("another address of the same /64 not blocked")
	}
	if blocked, _ := f.Blocked(ctxFrom("2001:db8:1:3::1"), now); blocked {
		t.Error("another /64 blocked")
	}
}

// A flood of addresses failing once each neither grows the table nor frees the address
// that fails most.
func TestAuthFailuresTableIsBounded(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	f := NewAuthFailures(0.01, 5)
	heavy := ctxFrom("198.51.100.1")
	for range 20 {
		f.Fail(heavy, now)
	}
	for i := range 100_000 {
		f.Fail(ctxFrom(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)), now)
	}
	if blocked, _ := f.Blocked(heavy, now); !blocked {
		t.Fatal("the heaviest offender was evicted by a flood of one-time failures")
	}
	used := 0
	for _, s := range f.slots {
		if s.tat != 0 {
			used++
		}
	}
	if used > AuthFailureSlots {
		t.Fatalf("%d slots used", used)
	}
}

func TestAuthFailuresAllocatesNothing(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	f := NewAuthFailures(1, 3)
	ctx := ctxFrom("203.0.113.7")
	if n := testing.AllocsPerRun(100, func() { f.Blocked(ctx, now); f.Fail(ctx, now) }); n != 0 {
		t.Fatalf("%v allocations per check and failure", n)
	}
	th := NewThrottle(1e9, 1<<20)
	if n := testing.AllocsPerRun(100, func() { th.Allow(now) }); n != 0 {
		t.Fatalf("%v allocations per Throttle.Allow", n)
	}
}

// FuzzReduceError: whatever a request holds, the logged error text is short printable
// ASCII with no quoted request bytes.
func FuzzReduceError(f *testing.F) {
	f.Add(`error when reading request headers: invalid header value "a\x00b": buffer size=64`)
	f.Add("unsupported http version \"HTTP/tok\"")
	f.Fuzz(func(t *testing.T, s string) {
		got := reduceError(fmt.Errorf("%s", s))
		if len(got) > 96 {
			t.Fatalf("%d bytes", len(got))
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				t.Fatalf("byte %q in %q", c, got)
			}
		}
	})
}
