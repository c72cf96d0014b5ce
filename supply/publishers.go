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
	"github.com/switchboard/switchboard/persistence"
)

// publisher is a publisher as the hot path needs it.
type publisher struct {
	persistence.Publisher
	secret   []byte // api_secret, the HMAC key of sech
	currency []byte // currency_name as a JSON string
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
}

func newPublisherStore(db *persistence.DB, env string, log *zap.Logger) *publisherStore {
	s := &publisherStore{db: db, env: env, log: log}
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
	set := &publisherSet{byHash: make(map[[32]byte]*publisher, len(list)), byID: make(map[int64]*publisher, len(list))}
	for i, p := range list {
		if p.Environment != s.env {
			continue
		}
		pub := &publisher{Publisher: p, secret: []byte(p.APISecret), currency: appendJSONString(nil, p.CurrencyName)}
		set.byHash[hashes[i]] = pub
		set.byID[p.ID] = pub
	}
	s.set.Store(set)
	return nil
}

func (s *publisherStore) byID(id int64) *publisher { return s.set.Load().byID[id] }

// lookup finds the publisher of a token hash. On a miss it reloads the publishers, at most
// once a second across all callers, so that a publisher registered a moment ago is found.
func (s *publisherStore) lookup(h [32]byte) *publisher {
	if p := s.set.Load().byHash[h]; p != nil {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.set.Load().byHash[h]; p != nil { // another caller reloaded meanwhile
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
	return s.set.Load().byHash[h]
}

var errNoToken = fault.Unauthorized("missing X-Api-Token header")
var errBadToken = fault.Unauthorized("invalid api token")

// authenticate returns the publisher of the request's X-Api-Token.
func (a *API) authenticate(ctx *fasthttp.RequestCtx) (*publisher, error) {
	tok := ctx.Request.Header.Peek("X-Api-Token")
	if len(tok) == 0 {
		return nil, errNoToken
	}
	p := a.pubs.lookup(sha256.Sum256(tok))
	if p == nil {
		return nil, errBadToken
	}
	return p, nil
}
