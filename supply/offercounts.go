package supply

import (
	"context"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply/partners"
)

// FlushOffers adds the GET /campaigns answers counted since the last flush to the database.
// It runs every Config.OfferFlush and at shutdown; tests call it to avoid waiting. What a
// failed flush took is put back for the next one.
func (a *API) FlushOffers(ctx context.Context) error {
	now := a.now()
	cur := now / 3600
	var counts []persistence.OfferHour
	var from []*partners.OfferCount
	a.partners.Each(func(p *partners.Publisher) {
		if p.Offers == nil {
			return
		}
		for _, h := range [2]int64{cur - 1, cur} {
			if n := p.Offers.Take(h); n > 0 {
				counts = append(counts, persistence.OfferHour{Publisher: p.ID, Hour: time.Unix(h*3600, 0).UTC(), Offers: n})
				from = append(from, p.Offers)
			}
		}
	})
	if err := a.offers.AddPublisherOffers(ctx, counts); err != nil {
		for i, c := range counts {
			from[i].Return(c.Hour.Unix()/3600, c.Offers)
		}
		return err
	}
	return nil
}
