package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/cluster"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// runAsSwitchboard, set in a child's environment, makes the test binary run main() with the
// child's arguments: the tests below run the command as a real process without building it.
const runAsSwitchboard = "SWITCHBOARD_TEST_RUN_MAIN"

// process returns `switchboard args...` as a process of its own, with env added to a
// copy of this environment from which DATABASE_URL and SWITCHBOARD_* are removed.
func process(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DATABASE_URL=") || strings.HasPrefix(kv, "SWITCHBOARD_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, runAsSwitchboard+"=1")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// run runs `switchboard args...` in dir ("": this directory) to its end and returns its
// stdout, stderr and error.
func run(t *testing.T, dir string, env []string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := process(ctx, env, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// freeAddr returns a loopback address nothing listens on at the moment.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startServe starts `switchboard serve --addr addr args...` in dir ("": this directory)
// with env and waits until http://addr/healthz answers; the process is interrupted and
// waited for when t ends.
func startServe(t *testing.T, dir string, env []string, addr string, args ...string) *served {
	t.Helper()
	return startServeLimited(t, 0, dir, env, addr, args...)
}

// served is a running serve process.
type served struct {
	exited chan error  // receives the process's end (put back by whoever reads it)
	stderr *syncBuffer // its standard error
}

// alive reports whether the process still runs; when it has ended, the error and its
// standard error.
func (s *served) alive() (bool, string) {
	select {
	case err := <-s.exited:
		s.exited <- err
		return false, fmt.Sprintf("serve exited: %v\n%s", err, s.stderr.String())
	default:
		return true, ""
	}
}

// syncBuffer is a bytes.Buffer that a process writes while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startServeLimited is startServe with the process's limit of open file descriptors
// (RLIMIT_NOFILE, soft and hard) set to nofile, as a unit's LimitNOFILE does (0: this
// process's).
func startServeLimited(t *testing.T, nofile int, dir string, env []string, addr string, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := process(ctx, append([]string{"SWITCHBOARD_LOG_LEVEL=warn"}, env...), append([]string{"serve", "--addr", addr}, args...)...)
	if nofile > 0 { // the shell sets the limit and becomes the process (exec): same pid
		cmd.Path = "/bin/sh"
		cmd.Args = append([]string{"sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, nofile), os.Args[0]}, cmd.Args[1:]...)
	}
	cmd.Dir = dir
	s := &served{exited: make(chan error, 1), stderr: &syncBuffer{}}
	cmd.Stderr = s.stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-s.exited
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if ok, why := s.alive(); !ok {
			t.Fatal(why)
		}
		if r, err := http.Get("http://" + addr + "/healthz"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("serve did not answer /healthz within 60s\n%s", s.stderr.String())
	return nil
}

// TestVersion: `switchboard version` prints the module, the revision, its time and the Go
// version from the build information (a test binary has no VCS stamp: "unknown").
func TestVersion(t *testing.T) {
	t.Parallel()
	out, stderr, err := run(t, "", nil, "version")
	if err != nil {
		t.Fatalf("version: %v\n%s", err, stderr)
	}
	for _, want := range []string{"module   github.com/switchboard/switchboard\n", "version  ", "revision ", "time     ",
		"go       go1."} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := run(t, "", nil, "version", "extra"); err == nil {
		t.Error("version with an argument succeeded")
	}
}

// TestServeNeedsDatabase: serve with no --database-url and no DATABASE_URL refuses to start
// (non-zero exit, a message naming both and --dev) and creates no cluster; with --dev it
// starts the project-local cluster under ./.data and serves, as `make run` does.
func TestServeNeedsDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, stderr, err := run(t, dir, nil, "serve", "--addr", freeAddr(t))
	if err == nil {
		t.Fatal("serve without a database URL exited 0")
	}
	for _, want := range []string{"no database", "--database-url", "DATABASE_URL", "--dev"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("refusal lacks %q: %s", want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, devDataDir)); !os.IsNotExist(err) {
		t.Errorf("serve without --dev touched %s: %v", devDataDir, err)
	}

	t.Cleanup(func() { // after serve's own cleanup: the cluster outlives the process that started it
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, devDataDir)})
		if err == nil {
			err = c.Remove(ctx)
		}
		if err != nil {
			t.Errorf("remove the --dev cluster: %v", err)
		}
	})
	startServe(t, dir, nil, freeAddr(t), "--dev")
	if _, err := os.Stat(filepath.Join(dir, devDataDir, "pgdata", "PG_VERSION")); err != nil {
		t.Errorf("serve --dev made no cluster under %s: %v", devDataDir, err)
	}
}

// TestMigrateStatusAndNewerSchema: `migrate status` lists every migration as pending on an
// empty database and as applied after `migrate`; once a newer binary's migration is in the
// database, status names it and serve and migrate refuse with both versions.
func TestMigrateStatusAndNewerSchema(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	migs, err := persistence.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	newest := migs[len(migs)-1]
	status := func() []string {
		t.Helper()
		out, stderr, err := run(t, "", nil, "migrate", "status", "--database-url", url)
		if err != nil {
			t.Fatalf("migrate status: %v\n%s", err, stderr)
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}

	lines := status()
	if len(lines) != len(migs)+1 {
		t.Fatalf("empty database: %d lines, want one per migration (%d) and a summary:\n%s", len(lines), len(migs), strings.Join(lines, "\n"))
	}
	for i, m := range migs {
		if f := strings.Fields(lines[i]); len(f) != 2 || f[0] != m.Name || f[1] != "pending" {
			t.Errorf("empty database, line %d: %q, want %s pending", i, lines[i], m.Name)
		}
	}
	if want := fmt.Sprintf("schema 0000, binary %04d: %d pending", newest.Version, len(migs)); !strings.HasPrefix(lines[len(migs)], want) {
		t.Errorf("empty database summary %q, want %q…", lines[len(migs)], want)
	}

	if _, stderr, err := run(t, "", nil, "migrate", "--database-url", url); err != nil {
		t.Fatalf("migrate: %v\n%s", err, stderr)
	}
	lines = status()
	for i, m := range migs {
		if f := strings.Fields(lines[i]); len(f) != 3 || f[0] != m.Name || f[1] != "applied" {
			t.Errorf("migrated database, line %d: %q, want %s applied <time>", i, lines[i], m.Name)
		}
	}
	if want := fmt.Sprintf("schema %04d, binary %04d: up to date", newest.Version, newest.Version); lines[len(migs)] != want {
		t.Errorf("migrated database summary %q, want %q", lines[len(migs)], want)
	}

	// A newer binary migrated this database.
	future := newest.Version + 4
	db, err := persistence.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Pool.Exec(context.Background(), `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`,
		future, fmt.Sprintf("%04d_from_a_newer_binary.sql", future))
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines = status()
	if got := lines[len(lines)-2]; !strings.HasPrefix(got, fmt.Sprintf("%04d_from_a_newer_binary.sql", future)) ||
		!strings.HasSuffix(got, "(not in this binary)") {
		t.Errorf("status line of the newer migration: %q", got)
	}
	if want := fmt.Sprintf("schema %04d is newer than this binary's %04d", future, newest.Version); !strings.HasPrefix(lines[len(lines)-1], want) {
		t.Errorf("newer schema summary %q, want %q…", lines[len(lines)-1], want)
	}
	refusal := fmt.Sprintf("database schema is at migration %04d, newer than this binary's newest migration %04d", future, newest.Version)
	for _, args := range [][]string{
		{"serve", "--addr", freeAddr(t), "--database-url", url},
		{"migrate", "--database-url", url},
	} {
		_, stderr, err := run(t, "", nil, args...)
		if err == nil {
			t.Errorf("%s on a newer schema exited 0", args[0])
		}
		if !strings.Contains(stderr, refusal) {
			t.Errorf("%s on a newer schema: stderr lacks %q:\n%s", args[0], refusal, stderr)
		}
	}
}

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, string(b)
}

// checkExposition checks that every sample line of a /metrics body belongs to a family
// announced by HELP and TYPE lines, and that the runtime, process and engine families are
// there.
func checkExposition(t *testing.T, body string) {
	t.Helper()
	typed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ := strings.Cut(rest, " ")
			typed[name] = true
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && typed[b] {
				base = b
			}
		}
		if !typed[base] {
			t.Errorf("sample before its TYPE line: %q", line)
		}
	}
	for _, want := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds", "go_gc_gomemlimit_bytes",
		"process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds", "process_cpu_seconds_total",
		"switchboard_engine_campaigns", "switchboard_panel_participants", "switchboard_engine_snapshot_age_seconds", "switchboard_build_info", "switchboard_db_pool_total_conns"} {
		if !typed[want] {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestAdminListener: with --admin-addr the metrics, readiness and pprof are served on the
// admin listener and /metrics leaves the main one; without it /metrics stays on the main
// listener and pprof is nowhere.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	t.Run("admin-addr", func(t *testing.T) {
		t.Parallel()
		addr, admin := freeAddr(t), freeAddr(t)
		startServe(t, "", []string{"DATABASE_URL=" + pgtest.URL(t)}, addr, "--admin-addr", admin)
		cases := []struct {
			base, path string
			status     int
			contains   string
		}{
			{admin, "/metrics", 200, "# TYPE go_goroutines gauge"},
			{admin, "/readyz", 200, `"allocation":"ok","counters":"ok","database":"ok","engine":"ok","geoip":"off","heap":"ok","panel":"ok"`},
			{admin, "/healthz", 200, "ok"},
			{admin, "/debug/pprof/", 200, "goroutine"},
			{admin, "/debug/pprof/heap?debug=1", 200, "heap profile"},
			{admin, "/debug/pprof/profile?seconds=1", 200, ""},
			{admin, "/debug/pprof/cmdline", 404, ""}, // would show --database-url's password
			{admin, "/api/v1/campaigns", 404, ""},
			{addr, "/metrics", 404, ""},
			{addr, "/debug/pprof/", 404, ""},
			{addr, "/readyz", 200, `"engine":"ok"`},
		}
		for _, c := range cases {
			status, body := get(t, "http://"+c.base+c.path)
			if status != c.status || !strings.Contains(body, c.contains) {
				t.Errorf("%s on %s: %d, want %d with %q:\n%.300s", c.path, map[bool]string{true: "admin", false: "main"}[c.base == admin],
					status, c.status, c.contains, body)
			}
		}
		_, body := get(t, "http://"+admin+"/metrics")
		checkExposition(t, body)
	})
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		addr := freeAddr(t)
		startServe(t, "", nil, addr, "--database-url", pgtest.URL(t))
		status, body := get(t, "http://"+addr+"/metrics")
		if status != 200 {
			t.Fatalf("/metrics on the main listener: %d", status)
		}
		checkExposition(t, body)
		if status, _ := get(t, "http://"+addr+"/debug/pprof/"); status != 404 {
			t.Errorf("/debug/pprof/ on the main listener without --admin-addr: %d, want 404", status)
		}
	})
}
