package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence/cluster"
)

// Run performs a whole benchmark run and writes its report.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &Report{Options: o, Machine: DescribeMachine(), Started: time.Now()}
	tmp, err := os.MkdirTemp("", "switchboard-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	pg, err := startPostgres(ctx, o, tmp)
	if err != nil {
		return nil, err
	}
	defer pg.Remove(context.WithoutCancel(ctx)) //nolint:errcheck
	if err := pg.CreateDatabase(ctx, "bench", ""); err != nil {
		return nil, err
	}
	dbURL := pg.URL("bench")
	rep.Machine.Postgres = postgresVersion(ctx, dbURL)
	m, err := seedMarket(ctx, o, rep, dbURL)
	if err != nil {
		return nil, err
	}
	var stmts *statements
	if o.Statements {
		if stmts, err = openStatements(ctx, dbURL); err != nil {
			return nil, fmt.Errorf("pg_stat_statements: %w", err)
		}
		defer stmts.close()
	}
	if err := comparePaired(ctx, o, rep, m, dbURL, tmp, pg); err != nil {
		return rep, err
	}
	srv, addr, profile, err := startMeasured(ctx, o, rep, dbURL, tmp)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	if err := prewarmCache(ctx, o, rep, dbURL); err != nil {
		return rep, err
	}
	t := &Target{Addr: addr, PublicURL: "http://" + addr, Market: m}
	if err := measureLoad(ctx, o, rep, t, srv, PostmasterPID(pg.DataDir()), dbURL, profile, stmts); err != nil {
		return rep, err
	}
	stopMeasured(o, rep, srv, profile)
	if len(o.EngineSizes) > 0 {
		o.progress("engine match benchmark at %v campaigns", o.EngineSizes)
		rep.Engine = EngineBench(o.EngineSizes, o.EngineParticipants, 3, o.Seed)
	}
	rep.Took = time.Since(rep.Started)
	if err := WriteReport(o.Out, rep); err != nil {
		return rep, err
	}
	o.progress("report written to %s (run took %s)", filepath.Join(o.Out, "performance.md"), rep.Took.Round(time.Second))
	return rep, nil
}

// withDefaults fills what a run needs and o leaves unset: a logger, the binary to serve
// from, the rounds of a binary comparison.
func (o Options) withDefaults() (Options, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, err
		}
		o.Binary = exe
	}
	if o.CompareBinary != "" && o.CompareRounds <= 0 {
		o.CompareRounds = 6
	}
	return o, nil
}

// startPostgres starts the run's PostgreSQL in tmp: throwaway, durable (fsync on), tied to
// this process.
func startPostgres(ctx context.Context, o Options, tmp string) (*cluster.Cluster, error) {
	o.progress("starting PostgreSQL (fsync on) in %s", tmp)
	pg, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(tmp, "pg"), Fsync: true, Attached: true,
		Log:      o.Log.Named("cluster"),
		Settings: pgSettings(o)})
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL: %w", err)
	}
	return pg, nil
}

// seedMarket generates the run's market and seeds it into the database at dbURL.
func seedMarket(ctx context.Context, o Options, rep *Report, dbURL string) (*Market, error) {
	o.progress("generating %d campaigns and %d participants", o.Campaigns, o.Participants)
	m := GenerateMarket(o.Campaigns, o.Participants, o.Seed)
	m.PastSessions, m.PartitionDays = o.PastSessions, o.PartitionDays
	o.progress("seeding with COPY")
	var err error
	if rep.Seed, err = Seed(ctx, dbURL, m, o.History, time.Now(), o.Log.Named("seed")); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	o.progress("seeded in %s: %v", rep.Seed.Took.Round(time.Millisecond), rep.Seed.Rows)
	return m, nil
}

// comparePaired runs the paired comparisons the options ask for. They run first, on the
// market as seeded, with no other server running: the entry and callback phases fill the
// quotas of the campaigns the main server's policy offers most (each up to its seeded
// room), and a market one policy has reshaped is not even ground for the other.
func comparePaired(ctx context.Context, o Options, rep *Report, m *Market, dbURL, tmp string, pg *cluster.Cluster) error {
	if o.CompareAllocation <= 0 && o.CompareBinary == "" {
		return nil
	}
	pgPID := PostmasterPID(pg.DataDir())
	if o.CompareAllocation > 0 {
		o.progress("comparing the allocation policies' offers in %d rounds", o.CompareAllocation)
		if err := compareAllocation(ctx, o, rep, m, dbURL, tmp, pgPID); err != nil {
			return err
		}
	}
	if o.CompareBinary != "" {
		o.progress("comparing this binary's offers with %s in %d rounds", o.CompareBinary, o.CompareRounds)
		if err := compareBinary(ctx, o, rep, m, dbURL, tmp, pgPID); err != nil {
			return err
		}
	}
	return nil
}

// startMeasured starts the serve child the load phases measure, with an admin listener
// (which serves the snapshot a joining process starts from) and the CPU profile the options
// ask for, and returns it, its address and the profile's path ("": none).
func startMeasured(ctx context.Context, o Options, rep *Report, dbURL, tmp string) (*server, string, string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	profile := ""
	if o.Profile && o.ProfilePhase != ScEntriesJoining {
		profile = filepath.Join(tmp, "server-cpu.pprof")
	}
	adminAddr, err := freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	first := o
	first.serveArgs = append(slices.Clone(o.serveArgs), "--admin-addr", adminAddr)
	srv, err := startServer(ctx, first, addr, dbURL, profile, filepath.Join(tmp, "server.log"))
	if err != nil {
		return nil, "", "", err
	}
	srv.adminAddr = adminAddr
	o.progress("server pid %d on %s loaded in %s", srv.cmd.Process.Pid, addr, srv.loaded.Round(time.Millisecond))
	rep.Load = srv.loaded
	st := ReadProc(srv.pid())
	rep.ServerRSS = st.RSS
	return srv, addr, profile, nil
}

// prewarmCache reads what a serving database keeps in memory into a database seeded with a
// year of sessions, unless the options measure it cold. It runs after the server's start-up:
// read before it, respondents (read first) were read from the disk again in the entries
// phase (17,764 blocks of its primary key in the run of 21:45 UTC), pushed out of shared
// buffers by the start-up's own reads.
func prewarmCache(ctx context.Context, o Options, rep *Report, dbURL string) error {
	if o.PastSessions <= 0 || o.ColdCache {
		return nil
	}
	var err error
	if rep.Prewarm, err = prewarm(ctx, dbURL); err != nil {
		return fmt.Errorf("prewarm: %w", err)
	}
	o.progress("read %d relations (%s, %s of it into shared buffers) into memory in %s", rep.Prewarm.Relations,
		mib(rep.Prewarm.Bytes), mib(rep.Prewarm.Buffered), rep.Prewarm.Took.Round(time.Millisecond))
	return nil
}

// measureLoad runs the load phases against srv, reading what autovacuum and the server's
// sweeps did during them, then times the year's operations on a database seeded with them.
func measureLoad(ctx context.Context, o Options, rep *Report, t *Target, srv *server, pgPID int, dbURL, profile string, stmts *statements) error {
	srv.mem.watchPostgres(pgPID)
	maintBefore, maintErr := readMaintenance(ctx, dbURL)
	metricsClient := NewClient(srv.metricsAddr(t.Addr), 1)
	sweepsBefore := scrapeCounts(metricsClient, srv.metricsAddr(t.Addr))
	if err := runLoad(ctx, o, rep, t, srv, pgPID, profile, stmts); err != nil {
		return err
	}
	if after := scrapeCounts(metricsClient, srv.metricsAddr(t.Addr)); after.verdicts != nil && sweepsBefore.verdicts != nil {
		rep.Sweeps = &SweepSummary{Count: int64(after.sweeps - sweepsBefore.sweeps), Seconds: after.sweepSeconds - sweepsBefore.sweepSeconds,
			ReleaseSeconds: after.releaseSeconds - sweepsBefore.releaseSeconds}
	}
	if maintErr == nil {
		var after map[string]tableMaintenance
		if after, maintErr = readMaintenance(ctx, dbURL); maintErr == nil {
			rep.Maintenance = maintenanceBetween(maintBefore, after, srv.mem.start)
		}
	}
	if maintErr != nil {
		rep.note("autovacuum's runs during the load not read: %v", maintErr)
	}
	if o.PastSessions > 0 {
		o.progress("timing the sweeper, exports and insights on a year of sessions")
		srv.mem.mark("year: sweeper, exports, insights", 0)
		rep.Year = measureYear(ctx, dbURL, t, o.Log.Named("year"))
	}
	return nil
}

// stopMeasured stops the measured server and keeps what it leaves: its peak memory, its
// memory trace (placing the open-loop phases' slowest seconds on it) and its CPU profile.
func stopMeasured(o Options, rep *Report, srv *server, profile string) {
	if st := ReadProc(srv.pid()); st.Valid {
		rep.ServerHWM = st.HWM
	}
	srv.stop()
	rep.Memory, rep.Marks = srv.mem.finish()
	placeSlowest(rep.Phases, rep.Memory, srv.mem.start)
	if profile == "" {
		return
	}
	if fi, err := os.Stat(profile); err == nil && fi.Size() > 0 {
		dst := filepath.Join(o.Out, "bench", "server-cpu.pprof")
		if err := copyFile(profile, dst); err == nil {
			rep.Profile, rep.ProfilePhase = dst, cmp.Or(o.ProfilePhase, ScOffers)
		}
	} else {
		rep.note("no CPU profile was written by the server child")
	}
}
