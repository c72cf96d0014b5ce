package supply

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// offerCount counts one publisher's GET /campaigns answers in this process until a flush adds
// them to the database (persistence.AddPublisherOffers), for the offers of GET /stats. The
// hot path only increments an atomic. Counts are kept per UTC hour parity, so that a flush
// right after an hour boundary still credits the previous hour with what it served then (a
// flush failing for over an hour credits the current hour instead).
type offerCount struct {
	hours [2]atomic.Int64
}

// add counts an answer at now (unix seconds). A nil count (a publisher made up by a
// benchmark) counts nothing.
func (c *offerCount) add(now int64) {
	if c != nil {
		c.hours[(now/3600)&1].Add(1)
	}
}

// FlushOffers adds the GET /campaigns answers counted since the last flush to the database.
// It runs every Config.OfferFlush and at shutdown; tests call it to avoid waiting. What a
// failed flush took is put back for the next one.
func (a *API) FlushOffers(ctx context.Context) error {
	now := a.now()
	cur := now / 3600
	var counts []persistence.OfferHour
	var from []*offerCount
	for _, p := range a.pubs.set.Load().byID {
		if p.offers == nil {
			continue
		}
		for _, h := range [2]int64{cur - 1, cur} {
			if n := p.offers.hours[h&1].Swap(0); n > 0 {
				counts = append(counts, persistence.OfferHour{Publisher: p.ID, Hour: time.Unix(h*3600, 0).UTC(), Offers: n})
				from = append(from, p.offers)
			}
		}
	}
	if err := a.db.AddPublisherOffers(ctx, counts); err != nil {
		for i, c := range counts {
			from[i].hours[(c.Hour.Unix()/3600)&1].Add(c.Offers)
		}
		return err
	}
	return nil
}
