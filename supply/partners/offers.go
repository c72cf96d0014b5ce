package partners

import (
	"sync/atomic"
)

// OfferCount counts one publisher's GET /campaigns answers in this process until a flush adds
// them to the database (persistence.AddPublisherOffers), for the offers of GET /stats. The
// hot path only increments an atomic. Counts are kept per UTC hour parity, so that a flush
// right after an hour boundary still credits the previous hour with what it served then (a
// flush failing for over an hour credits the current hour instead).
type OfferCount struct {
	hours [2]atomic.Int64
}

// Add counts an answer at now (unix seconds). A nil count (a publisher made up by a
// benchmark) counts nothing.
func (c *OfferCount) Add(now int64) {
	if c != nil {
		c.hours[(now/3600)&1].Add(1)
	}
}

// Take returns what was counted in hour (unix seconds / 3600) and resets it.
func (c *OfferCount) Take(hour int64) int64 { return c.hours[hour&1].Swap(0) }

// Return puts back n answers of hour that a failed flush took.
func (c *OfferCount) Return(hour, n int64) { c.hours[hour&1].Add(n) }
