// Package pgtest gives tests a fresh, migrated PostgreSQL database each.
//
// Every test binary that uses it starts one throwaway cluster (fsync off, a
// free port, a temporary directory) the first time a test asks for a
// database, and removes it when the tests are done. Each call to URL creates a
// new database cloned from a template migrated once per binary, and drops it
// when the test ends. Packages opt in from their TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		db, err := persistence.Open(ctx, pgtest.URL(t), nil)
//		...
//	}
//
// With TEST_DATABASE_URL set no cluster is started: the per-test databases
// are created on that server (the URL's user needs CREATEDB), named
// sbtest_<pid>_<random>_<n> so that several binaries can share it.
//
// The cluster's server is a child of the test binary and goes away with it,
// even when the binary is killed (a test timeout); the directories such
// binaries leave behind are swept by the next binary.
//
// pgtest imports package persistence (for MigrateURL), so tests inside
// package persistence, or inside a package persistence imports, must be in an
// external test package (package persistence_test) to use it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/cluster"
)

// EnvURL names the environment variable of an existing server to use instead
// of a throwaway cluster.
const EnvURL = "TEST_DATABASE_URL"

// tempPattern names the directories of throwaway clusters in os.TempDir().
const tempPattern = "switchboard-pgtest-"

// ownerFile in a throwaway cluster's directory holds the pid of its test binary.
const ownerFile = "owner.pid"

// migrate prepares the template database.
var migrate = persistence.MigrateURL

var (
	mainCalled atomic.Bool
	seq        atomic.Int64

	envOnce sync.Once
	env     *environment
	envErr  error
)

// environment is the server of this test binary.
type environment struct {
	cluster  *cluster.Cluster // nil when the server is TEST_DATABASE_URL's
	adminURL string           // a database to run CREATE/DROP DATABASE from
	urlFor   func(database string) string
	prefix   string   // of every database this binary creates
	clone    []string // options of CREATE DATABASE ... TEMPLATE

	tmplOnce sync.Once
	tmpl     string
	tmplErr  error
}

// Main runs the package's tests, then removes the cluster they used. Call it
// from TestMain (it does not return):
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	mainCalled.Store(true)
	code := m.Run()
	if err := teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
	}
	os.Exit(code)
}

// URL returns the URL of a new database holding the migrated schema and
// reference data, for t alone. It is dropped when t ends. Safe for parallel
// tests.
func URL(t testing.TB) string {
	t.Helper()
	e := setup(t)
	tmpl, err := e.template()
	if err != nil {
		t.Fatalf("pgtest: migrate the template database: %v", err)
	}
	return e.newDatabase(t, tmpl)
}

// EmptyURL returns the URL of a new, empty database (no schema) for t alone,
// dropped when t ends: for tests of the migrations themselves.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return setup(t).newDatabase(t, "")
}

// Cluster returns the binary's cluster, for tests that simulate an outage
// with Stop and Start. Such a test must not call t.Parallel (every test of the
// binary shares the cluster); the cluster is started again when t ends if the
// test left it stopped. With TEST_DATABASE_URL set there is no cluster to stop:
// the test is skipped.
func Cluster(t testing.TB) *cluster.Cluster {
	t.Helper()
	if os.Getenv(EnvURL) != "" {
		t.Skipf("pgtest: %s is set: no local cluster to stop and start", EnvURL)
	}
	e := setup(t)
	c := e.cluster
	t.Cleanup(func() {
		if c.Running() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Start(ctx); err != nil {
			t.Errorf("pgtest: start the cluster again after the test: %v", err)
		}
	})
	return c
}

// setup returns the binary's environment, creating it on first use.
func setup(t testing.TB) *environment {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("pgtest: add to this package's tests: func TestMain(m *testing.M) { pgtest.Main(m) }")
	}
	envOnce.Do(func() { env, envErr = newEnvironment() })
	if envErr != nil {
		t.Fatalf("pgtest: %v", envErr)
	}
	return env
}

func newEnvironment() (*environment, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("sbtest_%d_%s_", os.Getpid(), randomHex(3))

	if u := os.Getenv(EnvURL); u != "" {
		urlFor, err := databaseURLFunc(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvURL, err)
		}
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", EnvURL, err)
		}
		conn.Close(ctx)
		return &environment{adminURL: u, urlFor: urlFor, prefix: prefix}, nil
	}

	sweepStaleClusters()
	dir, err := os.MkdirTemp("", tempPattern+"*")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{
		Dir:      dir,
		Attached: true,
		Fsync:    false,
		Settings: map[string]string{
			"max_connections": "300",
			"shared_buffers":  "64MB",
			// Test databases are small: parallel plans only add noise.
			"max_parallel_workers_per_gather": "0",
			// With minimal WAL, cloning the template by file copy takes a
			// fraction of the time of the default (WAL-logged) clone.
			"wal_level":       "minimal",
			"max_wal_senders": "0",
		},
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start a throwaway PostgreSQL cluster (set %s to use an existing server instead): %w", EnvURL, err)
	}
	e := &environment{cluster: c, adminURL: c.URL("postgres"), urlFor: c.URL, prefix: prefix}
	err = e.admin(ctx, func(conn *pgx.Conn) error {
		var version int
		if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
			return err
		}
		if version >= 150000 {
			e.clone = []string{"STRATEGY FILE_COPY"}
		}
		return nil
	})
	if err != nil {
		c.Remove(ctx)
		return nil, err
	}
	return e, nil
}

// template returns the name of the migrated template database, creating it
// on first use.
func (e *environment) template() (string, error) {
	e.tmplOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		name := e.prefix + "template"
		err := e.admin(ctx, func(conn *pgx.Conn) error {
			if err := cluster.DropDatabaseOn(ctx, conn, name); err != nil {
				return err
			}
			return cluster.CreateDatabaseOn(ctx, conn, name, "")
		})
		if err != nil {
			e.tmplErr = err
			return
		}
		if err := migrate(ctx, e.urlFor(name)); err != nil {
			e.tmplErr = err
			return
		}
		// Cloning needs the template to have no sessions: a closed connection's
		// backend may linger for a moment, and the server waits up to 5 s for it.
		e.tmplErr = e.admin(ctx, func(conn *pgx.Conn) error { return waitNoSessions(ctx, conn, name) })
		e.tmpl = name
	})
	return e.tmpl, e.tmplErr
}

// newDatabase creates a database for t from template ("" = empty) and returns
// its URL.
func (e *environment) newDatabase(t testing.TB, template string) string {
	t.Helper()
	name := e.prefix + strconv.FormatInt(seq.Add(1), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.admin(ctx, func(conn *pgx.Conn) error {
		if template == "" {
			return cluster.CreateDatabaseOn(ctx, conn, name, "")
		}
		return cluster.CreateDatabaseOn(ctx, conn, name, template, e.clone...)
	}); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.admin(ctx, func(conn *pgx.Conn) error { return cluster.DropDatabaseOn(ctx, conn, name) }); err != nil {
			t.Logf("pgtest: %v", err)
		}
	})
	return e.urlFor(name)
}

// admin runs f on a new connection to the maintenance database. A new
// connection each time keeps it working across an outage test's restart.
func (e *environment) admin(ctx context.Context, f func(*pgx.Conn) error) error {
	if e.cluster != nil && !e.cluster.Running() {
		// A test stopped the cluster and has not started it again yet.
		if err := e.cluster.Start(ctx); err != nil {
			return err
		}
	}
	conn, err := pgx.Connect(ctx, e.adminURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return f(conn)
}

// waitNoSessions ends the sessions on database name and waits until they are gone.
func waitNoSessions(ctx context.Context, conn *pgx.Conn, name string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&n)
		if err != nil || n == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("database %s still has %d sessions", name, n)
		}
		_, _ = conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name)
		time.Sleep(10 * time.Millisecond)
	}
}

// teardown removes what this binary created.
func teardown() error {
	if env == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if env.cluster != nil {
		return env.cluster.Remove(ctx)
	}
	// A shared server: drop this binary's databases (the template, and any a
	// test could not drop).
	return env.admin(ctx, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, env.prefix)
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		var errs []error
		for _, n := range names {
			errs = append(errs, cluster.DropDatabaseOn(ctx, conn, n))
		}
		return errors.Join(errs...)
	})
}

// sweepStaleClusters removes the directories of throwaway clusters whose test
// binary is gone (killed before it could clean up).
func sweepStaleClusters() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPattern+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
			continue // its binary still runs
		}
		if cluster.IsRunning(dir) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

// databaseURLFunc returns a function giving the address of another database
// on the server of base, a postgres:// URL or a keyword/value string.
func databaseURLFunc(base string) (func(string) string, error) {
	if _, err := pgx.ParseConfig(base); err != nil {
		return nil, err
	}
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			return nil, err
		}
		return func(db string) string {
			v := *u
			v.Path, v.RawPath = "/"+db, ""
			return v.String()
		}, nil
	}
	return func(db string) string { return base + " dbname=" + db }, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
