package router

import (
	"sync"
	"time"
)

// ttlCache is a small read-through cache of rarely changing rows.
type ttlCache[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]ttlEntry[V]
	ttl time.Duration
}

type ttlEntry[V any] struct {
	v  V
	at time.Time
}

func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

func (c *ttlCache[K, V]) get(k K, load func() (V, error)) (V, error) {
	now := time.Now()
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if ok && now.Sub(e.at) < c.ttl {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		var zero V
		return zero, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) > 100_000 {
		c.m = make(map[K]ttlEntry[V])
	}
	c.m[k] = ttlEntry[V]{v, now}
	c.mu.Unlock()
	return v, nil
}

func (c *ttlCache[K, V]) forget(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}
