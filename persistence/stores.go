package persistence

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// The stores below divide the database's methods by the concept they keep, so that a
// handler names the one store it needs (its interface a subset of that store) and a reader
// finds a statement beside its kind. Each embeds the shared *DB: the pool, the logger, the
// load pacer, the sessions' partitions and the transaction helpers (Tx, InOneTx, sendTx)
// are one per database, and a call into another store reads as such
// (db.Insights.openLineExport).

// AccountStore keeps who may call the service: buyers and their tokens, secrets and
// webhooks, publishers (supply partners) and their credentials, and the service keys. The
// buyer and supply routes authenticate through it.
type AccountStore struct{ *DB }

// OperatorStore keeps the console's operators, their roles and their sessions, apart from
// the API accounts: a person at the console is not a buyer or a partner.
type OperatorStore struct{ *DB }

// CampaignStore keeps what buyers write through the API: campaigns, their quotas, custom
// qualifications, retargets, exclusions, relationships and screeners, each written with
// the checks that keep a buyer to its own campaigns.
type CampaignStore struct{ *DB }

// CatalogStore reads the reference data campaigns are written against: countries and
// languages, standard qualifications (and a buyer's custom ones beside them) with their
// answers and texts, and the inputs of feasibility. It writes nothing: the reference data
// come with the migrations, custom qualifications through CampaignStore.
type CatalogStore struct{ *DB }

// ParticipantStore keeps the panel: participants impanelled by partners, their profiles
// and entry history, the bulk (streamed, paced) loads the engine starts from, and their
// support requests.
type ParticipantStore struct{ *DB }

// SessionStore keeps the sessions of the hot path: admission of entries (batched), their
// outcomes from callbacks, test sessions, reroute chains, prescreens and reconciliation.
// Its statements are the measured ones of entry and callback.
type SessionStore struct{ *DB }

// QualityStore keeps the quality signals of participants and devices, the blocks they
// lead to and their history, so that supply can refuse a blocked participant.
type QualityStore struct{ *DB }

// OutboxStore keeps the durable deliveries: partner postbacks claimed, released and
// marked by the payout worker, and the record of buyer webhook deliveries.
type OutboxStore struct{ *DB }

// InsightStore keeps what campaigns and the market produced, for buyers and the console:
// projects, results, demographic and line exports, daily completes and outcomes, and the
// partners' hourly offer statistics. Nothing on the hot path waits on it.
type InsightStore struct{ *DB }

// LedgerStore keeps the money: buyer and partner statements, their CSV exports, the
// exchange months, month closing and the ledger's checks and backfill.
type LedgerStore struct{ *DB }

// FeedStore feeds the in-memory engine: the campaigns it routes to, the counts it shares
// with other processes, the notifications and the change positions it catches up from.
type FeedStore struct{ *DB }

// MaintenanceStore holds the background upkeep: sweeps of stale and full campaigns and
// sessions, partitions of sessions, purges, analyzes and the registry of serving
// processes.
type MaintenanceStore struct{ *DB }

// NewDB wraps pool, already open, in a handle with every store wired to it; Open is the
// usual way in. A nil log discards.
func NewDB(pool *pgxpool.Pool, log *zap.Logger) *DB {
	if log == nil {
		log = zap.NewNop()
	}
	db := &DB{Pool: pool, log: log}
	db.Accounts = &AccountStore{db}
	db.Operators = &OperatorStore{db}
	db.Campaigns = &CampaignStore{db}
	db.Catalog = &CatalogStore{db}
	db.Participants = &ParticipantStore{db}
	db.Sessions = &SessionStore{db}
	db.Quality = &QualityStore{db}
	db.Outbox = &OutboxStore{db}
	db.Insights = &InsightStore{db}
	db.Ledger = &LedgerStore{db}
	db.Feed = &FeedStore{db}
	db.Maintenance = &MaintenanceStore{db}
	return db
}
