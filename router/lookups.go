package router

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/supplierlink"
)

// accountStore is what entry and callbacks read of accounts: a publisher missing from
// supply's memory, a callback's buyer.
type accountStore interface {
	PublisherByID(ctx context.Context, id int64) (persistence.Publisher, error)
	BuyerByCustomerID(ctx context.Context, customerID string) (persistence.Buyer, error)
}

// campaignStore is what the router reads and writes of campaigns: routes, pre-screeners,
// retarget identifiers, and a pre-screener's sheet attached to its session.
type campaignStore interface {
	CampaignRoute(ctx context.Context, id int64) (persistence.CampaignRoute, error)
	CampaignScreener(ctx context.Context, campaignID int64) (*persistence.Screener, error)
	RetargetIdentifier(ctx context.Context, campaignID, participantID int64, deviceID, deviceHash string) (string, error)
	AttachPrescreen(ctx context.Context, responseID, participantID, campaignID int64) (int64, error)
}

// participantStore is what the router reads of participants its panel does not hold.
type participantStore interface {
	ParticipantByID(ctx context.Context, id int64) (persistence.PanelParticipant, error)
	ParticipantUser(ctx context.Context, id int64) (string, error)
}

// lookups are the rows entry and callbacks read: publishers, buyers, campaign routes and
// pre-screeners (cached), and participants (the panel, the database on a miss).
type lookups struct {
	accounts     accountStore
	campaigns    campaignStore
	participants participantStore
	panel        *engine.Panel
	pubFn        func(id int64) (persistence.Publisher, bool)

	routes ttlCache[int64, persistence.CampaignRoute]
	buyers ttlCache[string, persistence.Buyer]
	pubs   ttlCache[int64, persistence.Publisher]
	// screeners: the hosted pre-screener of each campaign, nil when it has none (prescreen.go).
	screeners ttlCache[int64, *persistence.Screener]

	// decoded keeps the participants that entries decode their participant into (their
	// answers' and entries' buffers), so that an entry's read of the panel allocates nothing.
	decoded sync.Pool
}

// init sets l up in place (it holds locks: it is not copied).
func (l *lookups) init(d Deps) {
	l.accounts, l.campaigns, l.participants, l.panel, l.pubFn = d.Accounts, d.Campaigns, d.Participants, d.Panel, d.Publisher
	// Campaign rows are forgotten when the campaign changes (CampaignsChanged); the TTL
	// is the safety net under that.
	l.routes.ttl = 30 * time.Second
	l.buyers.ttl = time.Minute
	l.pubs.ttl = 30 * time.Second
	l.screeners.ttl = 30 * time.Second
}

func (l *lookups) publisher(ctx context.Context, id int64) (persistence.Publisher, error) {
	if l.pubFn != nil {
		if p, ok := l.pubFn(id); ok {
			return p, nil
		}
	}
	return l.pubs.get(id, func() (persistence.Publisher, error) { return l.accounts.PublisherByID(ctx, id) })
}

func (l *lookups) buyer(ctx context.Context, customerID string) (persistence.Buyer, error) {
	return l.buyers.get(customerID, func() (persistence.Buyer, error) { return l.accounts.BuyerByCustomerID(ctx, customerID) })
}

func (l *lookups) route(ctx context.Context, id int64) (persistence.CampaignRoute, error) {
	return l.routes.get(id, func() (persistence.CampaignRoute, error) { return l.campaigns.CampaignRoute(ctx, id) })
}

// screener returns the campaign's pre-screener (nil: none), cached for a second.
func (l *lookups) screener(ctx context.Context, campaignID int64) (*persistence.Screener, error) {
	return l.screeners.get(campaignID, func() (*persistence.Screener, error) {
		return l.campaigns.CampaignScreener(ctx, campaignID)
	})
}

// retargetID is the {RETARGET_IDENTIFIER} of p in route's campaign, "" when its supplier
// link has no such placeholder.
func (l *lookups) retargetID(ctx context.Context, route persistence.CampaignRoute, p *engine.Participant) (string, error) {
	if !supplierlink.Has(route.SupplierLink, "RETARGET_IDENTIFIER") {
		return "", nil
	}
	return l.campaigns.RetargetIdentifier(ctx, route.ID, p.ID, p.DeviceID, p.DeviceIDHash)
}

// participant decodes the panel's participant with id into dst (valid until the next
// decode into dst), loading it into the panel on a miss (a participant impaneled by another
// process that this one has not heard of yet).
func (l *lookups) participant(ctx context.Context, id int64, dst *engine.Participant) error {
	if l.panel.LookupByID(id, dst) {
		return nil
	}
	pp, err := l.participants.ParticipantByID(ctx, id)
	if err != nil {
		return err
	}
	p, err := l.panel.Upsert(pp.PublisherID, pp.User, pp.Participant, pp.LastActive)
	if err != nil {
		return err
	}
	*dst = *p
	return nil
}

// decodedParticipant is a participant value to decode into, from l.decoded; the caller
// gives it back with releaseParticipant once nothing it decoded is in use.
func (l *lookups) decodedParticipant() *engine.Participant {
	if p, ok := l.decoded.Get().(*engine.Participant); ok {
		return p
	}
	return new(engine.Participant)
}

// releaseParticipant gives p back to l.decoded: its answers, entries and device id are
// overwritten by the next entry that decodes into it.
func (l *lookups) releaseParticipant(p *engine.Participant) { l.decoded.Put(p) }

// CampaignsChanged drops what the router cached of these campaigns (nil: of every
// campaign); the engine sync calls it for every campaign NOTIFY it applies.
func (l *lookups) CampaignsChanged(ids []int64) {
	if ids == nil {
		l.routes.clear()
		l.screeners.clear()
		return
	}
	for _, id := range ids {
		l.routes.forget(id)
		l.screeners.forget(id)
	}
}
