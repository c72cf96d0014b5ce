package httpio

import (
	"sync"
	"time"
)

// RateLimiter is a token bucket per key (a token's hash): Rate requests a second on
// average with bursts up to Burst. Buckets idle for a minute are forgotten.
type RateLimiter struct {
	rate, burst float64
	shards      [16]rateShard
}

type rateShard struct {
	mu      sync.Mutex
	buckets map[[32]byte]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// NewRateLimiter returns a limiter; rate <= 0 disables limiting.
func NewRateLimiter(rate float64, burst int) *RateLimiter {
	l := &RateLimiter{rate: rate, burst: float64(burst)}
	for i := range l.shards {
		l.shards[i].buckets = map[[32]byte]*bucket{}
	}
	return l
}

// Allow takes one token from key's bucket. When none is left it returns false and how long
// until one is.
func (l *RateLimiter) Allow(key [32]byte, now time.Time) (bool, time.Duration) {
	if l == nil || l.rate <= 0 {
		return true, 0
	}
	s := &l.shards[key[0]%uint8(len(l.shards))]
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.swept) > time.Minute {
		for k, b := range s.buckets {
			if now.Sub(b.last) > time.Minute {
				delete(s.buckets, k)
			}
		}
		s.swept = now
	}
	b := s.buckets[key]
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		s.buckets[key] = b
	}
	b.tokens += now.Sub(b.last).Seconds() * l.rate
	if b.tokens > l.burst {
		b.tokens = l.burst
	}
	b.last = now
	if b.tokens < 1 {
		wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
		return false, wait
	}
	b.tokens--
	return true, 0
}
