package persistence

import (
	"context"
	"slices"
	"time"
)

// SessionInBlockSQL is the lookup by tid within a block, for the test of its partition pruning.
const SessionInBlockSQL = sessionInBlockSQL

// RecordOutcomesSQL is the callbacks' batch statement, for the test of its partition pruning.
var RecordOutcomesSQL = recordOutcomesSQL

// OfferSessionSQL is the lookup of an offer's session in progress, for the test of its floor.
var OfferSessionSQL = offerSessionSQL

// SendPartLookups is the coalesced reader's round trip, for the test of its plans.
var SendPartLookups = sendPartLookups

// PartLookups is the coalesced reader's statements for the ids [lo, hi), for the test of
// their plans.
func PartLookups(ctx context.Context, db *DB, lo, hi int64) []string {
	var ps sessionParts
	out, _ := ps.overlapping(ctx, db.Pool, lo, hi, nil)
	return out
}

// OutcomesOn is the outcome statement db runs for a batch of the ids [lo, hi), from the
// partitions as they are now (db's list is read again).
func OutcomesOn(ctx context.Context, db *DB, lo, hi int64) string {
	db.parts.mu.Lock()
	db.parts.list, db.parts.read = nil, time.Time{}
	db.parts.mu.Unlock()
	return db.parts.outcomesOn(ctx, db.Pool, lo, hi)
}

// The admission's plan settings and its checks, for the test of the checks' plans.
const (
	AdmitSettingsSQL = admitSettingsSQL
)

// AdmitChecksSQL is the admission's read of stored facts, for the test of its plans.
var AdmitChecksSQL = admitChecksSQL

// AdmitBatch decides es in one transaction as a batch of the EntryWriter does.
func (db *DB) AdmitBatch(ctx context.Context, es []Entry) ([]Admission, error) {
	s := admitScratches.Get().(*admitScratch)
	defer s.release()
	if err := db.Sessions.admitBatch(ctx, es, s); err != nil {
		return nil, err
	}
	return slices.Clone(s.out), nil
}
