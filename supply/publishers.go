package supply

import (
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/persistence"
)

// publisher is a publisher as the hot path needs it.
type publisher struct {
	persistence.Publisher
	secret   []byte // api_secret, the HMAC key of sech
	currency []byte // currency_name as a JSON string
	// limit is the publisher's request rate limit in this process; it survives reloads of
	// the publisher (nil: no limit).
	limit *httpio.Throttle
	// offers counts its GET /campaigns answers until the next flush (offercounts.go); it
	// survives reloads of the publisher.
	offers *offerCount
}

type publisherSet struct {
	byHash map[[32]byte]*publisher
	byID   map[int64]*publisher
}

// publisherStore keeps the publishers of this deployment's environment in memory, keyed by
// the SHA-256 of their token (the form the database stores), so that authenticating a
// request costs one hash and one map read. Lookups go by hash: the token itself is never
// compared, so there is no secret-dependent comparison to time.
type publisherStore struct {
	db  *persistence.DB
	env string
	log *zap.Logger
	set atomic.Pointer[publisherSet]

	mu   sync.Mutex // serializes reloads
	last time.Time  // of the last reload attempt

	rate  float64 // requests a second per publisher; <= 0: no limit
	burst int
}

func newPublisherStore(db *persistence.DB, env string, log *zap.Logger, rate float64, burst int) *publisherStore {
	s := &publisherStore{db: db, env: env, log: log, rate: rate, burst: burst}
	s.set.Store(&publisherSet{byHash: map[[32]byte]*publisher{}, byID: map[int64]*publisher{}})
	return s
}

func (s *publisherStore) refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshLocked(ctx)
}

func (s *publisherStore) refreshLocked(ctx context.Context) error {
	s.last = time.Now()
	list, hashes, err := s.db.PublishersWithTokenHash(ctx)
	if err != nil {
		return err
	}
	old := s.set.Load()
	set := &publisherSet{byHash: make(map[[32]byte]*publisher, len(list)), byID: make(map[int64]*publisher, len(list))}
	for i, p := range list {
		if p.Environment != s.env {
			continue
		}
		pub := &publisher{Publisher: p, secret: []byte(p.APISecret), currency: appendJSONString(nil, p.CurrencyName)}
		if o := old.byID[p.ID]; o != nil {
			pub.limit = o.limit // a reload must not hand out a fresh burst
			pub.offers = o.offers
		} else {
			pub.limit = httpio.NewThrottle(s.rate, s.burst)
			pub.offers = new(offerCount)
		}
		set.byHash[hashes[i]] = pub
		set.byID[p.ID] = pub
	}
	s.set.Store(set)
	return nil
}

func (s *publisherStore) byID(id int64) *publisher { return s.set.Load().byID[id] }

// known finds the publisher of a token hash in memory, without reloading.
func (s *publisherStore) known(h [32]byte) *publisher { return s.set.Load().byHash[h] }

// lookup finds the publisher of a token hash. On a miss it reloads the publishers, at most
// once a second across all callers, so that a publisher registered a moment ago is found.
func (s *publisherStore) lookup(h [32]byte) *publisher {
	if p := s.known(h); p != nil {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.known(h); p != nil { // another caller reloaded meanwhile
		return p
	}
	if time.Since(s.last) < time.Second {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.refreshLocked(ctx); err != nil {
		s.log.Warn("publisher reload on unknown token failed", zap.Error(err))
		return nil
	}
	return s.known(h)
}

var (
	errNoToken     = fault.Unauthorized("missing X-Api-Token header")
	errBadToken    = fault.Unauthorized("invalid api token")
	errRateLimited = fault.RateLimited()
)

// authenticate returns the publisher of the request's X-Api-Token, within the publisher's
// rate limit. A token not in memory costs a reload at most once a second; a client address
// that keeps presenting such tokens is refused 429 before that (httpio.AuthFailures). A
// known token never meets the failure limit, so a partner sharing an address with a
// guesser is not slowed.
func (a *API) authenticate(ctx *fasthttp.RequestCtx) (*publisher, error) {
	now := time.Now()
	tok := ctx.Request.Header.Peek("X-Api-Token")
	if len(tok) == 0 {
		return nil, a.authFailures.Failed(ctx, now, errNoToken)
	}
	h := sha256.Sum256(tok)
	p := a.pubs.known(h)
	if p == nil {
		if err := a.authFailures.Refuse(ctx, now); err != nil {
			return nil, err
		}
		if p = a.pubs.lookup(h); p == nil {
			return nil, a.authFailures.Failed(ctx, now, errBadToken)
		}
	}
	if ok, wait := p.limit.Allow(now); !ok {
		httpio.SetRetryAfter(ctx, wait)
		return nil, errRateLimited
	}
	return p, nil
}

// mirrorPublishers reloads the publishers as soon as one changes (a NOTIFY on
// persistence.PublisherChannel: created, updated, new token or secret), so that every
// process agrees within moments; the periodic refresh (runLoops) stays as the safety net.
func (a *API) mirrorPublishers(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[int64]{
		Name:     "publishers",
		Log:      a.log,
		Listen:   mirror.Listener(a.db.ListenOn, persistence.PublisherChannel),
		Notified: func(_ string, add func(int64)) { add(0) },
		Debounce: 20 * time.Millisecond,
		Reload:   func(ctx context.Context, _ []int64) error { return a.pubs.refresh(ctx) },
		Full:     a.pubs.refresh, // after a reconnect: changes notified meanwhile were lost
	})
}
