package partners

import (
	"context"
	"time"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/mirror"
	"github.com/switchboard/switchboard/persistence"
)

// KeyGrace is how long past the tokens' lifetime a replaced service key still verifies: a
// process that missed the rotation's notification keeps signing with the old key until its
// next reload (at most Config.KeyReload later), and those tokens live entrytoken.TTL.
const KeyGrace = 5 * time.Minute

// loadKeys reads the service key and the keys it replaced within the tokens' lifetime plus
// KeyGrace into a keyring, or sets them in d.key when it exists (a rotation: the ring is
// swapped atomically, so the hot path never waits). Loads run one at a time, so that a read
// older than the ring never replaces it.
func (d *Directory) loadKeys(ctx context.Context) error {
	d.keysMu.Lock()
	defer d.keysMu.Unlock()
	life := entrytoken.TTL*time.Second + KeyGrace
	cur, prev, err := d.store.ServiceKeys(ctx, persistence.EntryKeyName, life)
	if err != nil {
		return err
	}
	ps := make([]entrytoken.Previous, len(prev))
	for i, p := range prev {
		ps[i] = entrytoken.Previous{Secret: p.Key, Until: p.SupersededAt.Add(life).Unix()}
	}
	if d.key == nil {
		d.key = entrytoken.NewKey(cur)
		d.key.SetLookup(d.lookUpKeys)
	}
	d.key.SetKeys(cur, ps...)
	return nil
}

// keyLookupTimeout bounds one look-up of the keys for a token under an unknown key id.
const keyLookupTimeout = 2 * time.Second

// lookUpKeys loads the keys for a token whose key id the ring does not hold: a rotation this
// process has not heard of yet (its notification on its way, or its LISTEN connection
// down). The keyring runs it at most once per entrytoken.LookupEvery, one at a time; a
// failure is logged once per outage.
func (d *Directory) lookUpKeys() error {
	ctx, cancel := context.WithTimeout(context.Background(), keyLookupTimeout)
	defer cancel()
	err := d.loadKeys(ctx)
	if err != nil {
		d.keyLookups.Failed(err)
	} else {
		d.keyLookups.Succeeded()
	}
	return err
}

// Key is the keyring that signs and verifies offer-entry, profiler and support tokens. It
// follows rotations.
func (d *Directory) Key() *entrytoken.Key { return d.key }

// mirrorKeys keeps the keyring equal to the database until ctx ends: a rotation notifies
// ServiceKeyChannel; the periodic reload is the safety net (and drops retired keys' bytes).
func (d *Directory) mirrorKeys(ctx context.Context) {
	mirror.Run(ctx, mirror.Config[int64]{
		Name:     "service keys",
		Log:      d.log,
		Listen:   mirror.Listener(d.feed.ListenOn, persistence.ServiceKeyChannel),
		Notified: func(_ string, add func(int64)) { add(0) },
		Reload:   func(ctx context.Context, _ []int64) error { return d.loadKeys(ctx) },
		Full:     d.loadKeys,
		Every:    d.cfg.KeyReload,
	})
}
