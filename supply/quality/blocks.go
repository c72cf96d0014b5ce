package quality

import (
	"context"
	"time"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/persistence"
)

// The blocked set: this process's in-memory mirror of quality_blocks, which GET /campaigns
// and entry read. It is kept current like the other mirrors (internal/mirror): LISTEN on
// persistence.QualityChannel, the blocks notifications name reloaded in batches, a full
// reload after every (re)connect and every ReloadEvery.

// blockEntry is a participant's latest block as the hot path reads it.
type blockEntry struct {
	participant int64
	publisher   int64
	user        string
	class       string
	blockedAt   int64 // unix seconds
	until       int64 // unix seconds: expiry or lifting
	appliedAt   int64 // local unix nanoseconds, to merge with a concurrent full reload
}

type userKey struct {
	publisher int64
	user      string
}

// blockSet is immutable; writers replace it (blocks are rare, reads are every request).
type blockSet struct {
	byID   map[int64]*blockEntry
	byUser map[userKey]*blockEntry
}

var emptyBlocks = &blockSet{byID: map[int64]*blockEntry{}, byUser: map[userKey]*blockEntry{}}

// Apply puts decided or changed blocks into this process's blocked set at once (every
// process also hears of them through NOTIFY). newly counts them as this process's
// decisions in /metrics.
func (q *Service) Apply(blocks []persistence.QualityBlock, newly bool) {
	if q == nil || len(blocks) == 0 {
		return
	}
	q.blockMu.Lock()
	defer q.blockMu.Unlock()
	old := q.blocks.Load()
	n := &blockSet{byID: make(map[int64]*blockEntry, len(old.byID)+len(blocks)), byUser: make(map[userKey]*blockEntry, len(old.byUser)+len(blocks))}
	for k, v := range old.byID {
		n.byID[k] = v
	}
	for k, v := range old.byUser {
		n.byUser[k] = v
	}
	at := time.Now().UnixNano()
	for _, b := range blocks {
		e := &blockEntry{participant: b.ParticipantID, publisher: b.PublisherID, user: b.User, class: b.RuleClass,
			blockedAt: b.BlockedAt.Unix(), until: b.Until().Unix(), appliedAt: at}
		if cur := n.byID[e.participant]; cur != nil && cur.blockedAt > e.blockedAt {
			continue
		}
		n.byID[e.participant] = e
		n.byUser[userKey{e.publisher, e.user}] = e
		if newly {
			q.statsOf(b.PublisherID).blocks.Add(1)
		}
	}
	q.blocks.Store(n)
}

// LoadBlocks replaces the blocked set with the database's (active blocks and those that
// ended within a token's lifetime), keeping entries applied while it read.
func (q *Service) LoadBlocks(ctx context.Context) error {
	started := time.Now().UnixNano()
	bs, err := q.store.RecentQualityBlocks(ctx, entrytoken.TTL*time.Second)
	if err != nil {
		return err
	}
	q.blockMu.Lock()
	defer q.blockMu.Unlock()
	n := &blockSet{byID: make(map[int64]*blockEntry, len(bs)), byUser: make(map[userKey]*blockEntry, len(bs))}
	for _, b := range bs {
		e := &blockEntry{participant: b.ParticipantID, publisher: b.PublisherID, user: b.User, class: b.RuleClass,
			blockedAt: b.BlockedAt.Unix(), until: b.Until().Unix(), appliedAt: started}
		n.byID[e.participant] = e
		n.byUser[userKey{e.publisher, e.user}] = e
	}
	for id, e := range q.blocks.Load().byID {
		if e.appliedAt > started {
			n.byID[id] = e
			n.byUser[userKey{e.publisher, e.user}] = e
		}
	}
	q.blocks.Store(n)
	q.loadedOnce.Do(func() { close(q.blocksLoaded) })
	return nil
}

// BlocksLoaded is closed once the blocked set is first loaded from the database (or caught
// up from a snapshot's); at once for a service without storage.
func (q *Service) BlocksLoaded() <-chan struct{} {
	if q == nil || q.store == nil {
		return closed
	}
	return q.blocksLoaded
}

// closed is a channel closed from the start.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Blocks returns every participant's latest block in the blocked set, those ended lately
// included (what a process snapshot carries).
func (q *Service) Blocks() []persistence.QualityBlock {
	if q == nil {
		return nil
	}
	set := q.blocks.Load()
	out := make([]persistence.QualityBlock, 0, len(set.byID))
	for _, e := range set.byID {
		out = append(out, persistence.QualityBlock{ParticipantID: e.participant, PublisherID: e.publisher, User: e.user,
			RuleClass: e.class, BlockedAt: time.Unix(e.blockedAt, 0), ExpiresAt: time.Unix(e.until, 0)})
	}
	return out
}

// Restore sets the blocked set to a process snapshot's (Blocks), consistent at the database
// position xid (persistence.ChangePosition): the first load after Start reads only the
// blocks changed since. Call it before Start.
func (q *Service) Restore(blocks []persistence.QualityBlock, xid uint64) {
	if q == nil {
		return
	}
	n := &blockSet{byID: make(map[int64]*blockEntry, len(blocks)), byUser: make(map[userKey]*blockEntry, len(blocks))}
	for _, b := range blocks {
		e := &blockEntry{participant: b.ParticipantID, publisher: b.PublisherID, user: b.User, class: b.RuleClass,
			blockedAt: b.BlockedAt.Unix(), until: b.Until().Unix()}
		n.byID[e.participant] = e
		n.byUser[userKey{e.publisher, e.user}] = e
	}
	q.blocks.Store(n)
	q.seeded, q.seedXID = true, xid
}

// catchUpBlocks applies the latest blocks of the participants whose blocks changed since the
// snapshot's position, once the LISTEN is up (a change committed after the read is notified).
func (q *Service) catchUpBlocks(ctx context.Context) error {
	bs, err := q.store.QualityBlocksChangedAt(ctx, q.seedXID)
	if err != nil {
		return err
	}
	q.Apply(bs, false)
	q.seeded = false
	q.loadedOnce.Do(func() { close(q.blocksLoaded) })
	return nil
}

// mirrorBlocks keeps the blocked set equal to the database until ctx ends.
func (q *Service) mirrorBlocks(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[int64]{
		Name:     "quality blocks",
		Log:      q.log,
		Listen:   mirror.Listener(q.feed.ListenOn, persistence.QualityChannel),
		Notified: mirror.IDs,
		Reload:   q.applyNotices,
		Full: func(ctx context.Context) error {
			if q.seeded {
				return q.catchUpBlocks(ctx)
			}
			return q.LoadBlocks(ctx)
		},
		Every: q.cfg.ReloadEvery,
	})
}

// applyNotices applies the latest blocks of the participants notifications named.
func (q *Service) applyNotices(ctx context.Context, ids []int64) error {
	var bs []persistence.QualityBlock
	for _, id := range ids {
		b, ok, err := q.store.LatestQualityBlock(ctx, id)
		if err != nil {
			q.Apply(bs, false)
			return err
		}
		if ok {
			bs = append(bs, b)
		}
	}
	q.Apply(bs, false)
	return nil
}
