package app

import (
	"strings"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/maintenance"
	"github.com/switchboard/switchboard/router"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/supply"
	"github.com/switchboard/switchboard/supply/partners"
	"github.com/switchboard/switchboard/supply/quality"
)

// Config is everything a server needs; it is filled from flags by cmd/switchboard.
type Config struct {
	Addr string // listen address, e.g. 127.0.0.1:8080
	// AdminAddr, when set, is the operators' listener: /metrics, /readyz, /healthz and
	// /debug/pprof/ are served there (ServeAdmin) and /metrics leaves the main listener.
	// Empty: /metrics on the main listener and no pprof.
	AdminAddr   string
	DatabaseURL string  // PostgreSQL URL
	PublicURL   string  // base of every URL handed out and of every hash checked
	Environment string  // staging or live
	RateLimit   float64 // buyer requests per second per token; <= 0 disables
	RateBurst   int     // buyer burst per token
	// AuthFailRate and AuthFailBurst limit failed authentications per client address on the
	// buyer, insights and supply routes (default 2/s, burst 10; negative rate: off); past
	// them a client gets 429 with Retry-After until its failures have drained.
	AuthFailRate  float64
	AuthFailBurst int
	// HTTP bounds the server's read and write times and body size (httpio.ServerConfig).
	HTTP httpio.ServerConfig
	// RebuildEvery is the period of the engine's safety check under NOTIFY (default 60 s):
	// it re-reads the campaigns changed since the last one, and is a full rebuild from the
	// database at least every 30 minutes while campaigns change (enginesync.go).
	RebuildEvery time.Duration
	// Supply tunes /supply_api/v4 (top k, answer cache, ...); its PublicURL and Environment
	// are taken from the fields above.
	Supply supply.Config
	// Router tunes entry routing and callbacks; its PublicURL is taken from the field above.
	Router router.Config
	// Partners tunes the directory of publishers and service keys (reloads, per-publisher
	// rate limits); its Environment is taken from the field above.
	Partners partners.Config
	// Quality tunes the participant quality defenses (docs/quality.md).
	Quality quality.Config
	// Maintenance tunes the fleet's upkeep: the sweeper, partitions of sessions, the outbox's
	// retention, planner statistics.
	Maintenance maintenance.Config
	// RouterQuality tunes the routing side of participant quality (speeders); the rest is
	// Quality.
	RouterQuality router.QualityConfig
	// Postbacks tunes the partner postback worker (timeouts, backoff, the 24 h retry window).
	Postbacks payout.WorkerConfig
	// Allocation is the policy that ranks a participant's offers (docs/allocation.md); the
	// zero value is engine.AllocationGreedy.
	Allocation engine.Allocation
	// AllocationSplit, when it has arms, ranks each participant's offers under the policy of
	// the arm the participant falls in and replaces Allocation (docs/allocation.md).
	AllocationSplit engine.AllocationSplit
	// AllocationEvery is the period at which a weighted allocation recomputes its weights
	// off the request path (default 5 min).
	AllocationEvery time.Duration
	// JoinLoadShare is the share of wall-clock time, in (0, 1], that the start-up loads of a
	// process joining serving ones may work (join.go; 1: unpaced; 0: DefaultJoinLoadShare):
	// lower keeps the serving processes' latency, at the cost of a longer start.
	JoinLoadShare float64
	// SnapshotDir, when set, is where the process writes its snapshot every SnapshotEvery and
	// at graceful shutdown, and the snapshot it starts from (snapshots.go).
	SnapshotDir string
	// SnapshotEvery is the period of the local snapshot (default DefaultSnapshotEvery).
	SnapshotEvery time.Duration
	// SnapshotMaxAge is the age past which a snapshot is refused at start (default
	// DefaultSnapshotMaxAge): the catch-up of an older one reads too much.
	SnapshotMaxAge time.Duration
	// SnapshotPeer, when set, is the admin address (host:port or URL) of a running process
	// whose snapshot this one starts from, before SnapshotDir's.
	SnapshotPeer string
	// DemoPartner, when set (serve --demo), serves the demo supply partner's return page at
	// supply.DemoPartnerPath, where the demo's participants land after a survey.
	DemoPartner *supply.DemoPartner
	// Version is the binary's version as its heartbeat row shows it (cmd/switchboard fills
	// it, stamps included); empty: read from the build information.
	Version string
}

// withDefaults fills what the caller left empty.
func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.PublicURL == "" {
		c.PublicURL = "http://" + c.Addr
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.Environment == "" {
		c.Environment = persistence.EnvStaging
	}
	if c.RateLimit == 0 {
		c.RateLimit = 100
	}
	if c.RateBurst == 0 {
		c.RateBurst = 200
	}
	if c.AuthFailRate == 0 {
		c.AuthFailRate = 2
	}
	if c.AuthFailBurst == 0 {
		c.AuthFailBurst = 10
	}
	if c.RebuildEvery == 0 {
		c.RebuildEvery = time.Minute
	}
	if c.AllocationEvery <= 0 {
		c.AllocationEvery = 5 * time.Minute
	}
	if c.JoinLoadShare == 0 {
		c.JoinLoadShare = DefaultJoinLoadShare
	}
	if c.SnapshotEvery <= 0 {
		c.SnapshotEvery = DefaultSnapshotEvery
	}
	if c.SnapshotMaxAge <= 0 {
		c.SnapshotMaxAge = DefaultSnapshotMaxAge
	}
	return c
}
