package persistence

import (
	"context"
	"slices"
)

// The lookups by tid within a block, for the test of their partition pruning.
const (
	SessionInBlockSQL  = sessionInBlockSQL
	SessionsInBlockSQL = sessionsInBlockSQL
)

// RecordOutcomesSQL is the callbacks' batch statement, for the test of its partition pruning.
var RecordOutcomesSQL = recordOutcomesSQL

// OfferSessionSQL is the lookup of an offer's session in progress, for the test of its floor.
var OfferSessionSQL = offerSessionSQL

// SendBlockLookups is the coalesced reader's round trip, for the test of its plans.
var SendBlockLookups = sendBlockLookups

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
	if err := db.admitBatch(ctx, es, s); err != nil {
		return nil, err
	}
	return slices.Clone(s.out), nil
}
