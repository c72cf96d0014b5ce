package app

import (
	"time"

	"github.com/switchboard/switchboard/internal/httpio"
)

// SetSnapshotLag sets the snapshot lag for a test and returns what restores it.
func SetSnapshotLag(d time.Duration) (restore func()) {
	old := snapshotLagNanos.Swap(int64(d))
	return func() { snapshotLagNanos.Store(old) }
}

// SaveSnapshot writes the local snapshot now.
func (a *App) SaveSnapshot() error { return a.saveSnapshot(1) }

// SetSnapshotRate sets the rate limit of GET /admin/snapshot.
func (a *App) SetSnapshotRate(rate float64, burst int) {
	a.snapshotLimit = httpio.NewRateLimiter(rate, burst)
}

// SnapshotToken is the token a peer shows for the snapshot service key's bytes.
func SnapshotToken(key []byte) string { return snapshotToken(key) }

// SnapshotKeyName is the snapshot service key's name.
const SnapshotKeyName = snapshotKeyName

// Ready is closed once every load is in.
func (a *App) Ready() <-chan struct{} { return a.ready }
