package persistence

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
