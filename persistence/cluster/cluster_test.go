package cluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func connect(t *testing.T, ctx context.Context, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestStartStopStartKeepsData runs the pg_ctl (detached) mode used by
// `make run`: create, stop, start again from the same directory.
func TestStartStopStartKeepsData(t *testing.T) {
	ctx := testContext(t)
	dir := filepath.Join(t.TempDir(), "data")
	opts := Options{Dir: dir, Log: zaptest.NewLogger(t), Settings: map[string]string{"max_connections": "50"}}

	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	port := c.Port()
	if port == 0 {
		t.Fatal("no port")
	}
	if got := readPortFile(dir); got != port {
		t.Fatalf("port file holds %d, want %d", got, port)
	}
	if want := fmt.Sprintf("postgres://switchboard@127.0.0.1:%d/app?sslmode=disable", port); c.URL("app") != want {
		t.Fatalf("URL = %q, want %q", c.URL("app"), want)
	}

	if err := c.CreateDatabase(ctx, "app", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateDatabase(ctx, "app", ""); err != nil {
		t.Fatalf("second CreateDatabase: %v", err)
	}
	conn := connect(t, ctx, c.URL("app"))
	if _, err := conn.Exec(ctx, "CREATE TABLE kv (k text PRIMARY KEY, v text); INSERT INTO kv VALUES ('a', 'héllo')"); err != nil {
		t.Fatal(err)
	}
	var setting string
	if err := conn.QueryRow(ctx, "SHOW max_connections").Scan(&setting); err != nil || setting != "50" {
		t.Fatalf("max_connections = %q, %v; want 50", setting, err)
	}
	var enc string
	if err := conn.QueryRow(ctx, "SHOW server_encoding").Scan(&enc); err != nil || enc != "UTF8" {
		t.Fatalf("server_encoding = %q, %v", enc, err)
	}

	// A second Start on a running cluster reuses it.
	c2, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Port() != port {
		t.Fatalf("reused cluster on port %d, want %d", c2.Port(), port)
	}

	// Outage: stop under an open connection.
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Running() {
		t.Fatal("running after Stop")
	}
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("ping succeeded on a stopped cluster")
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop on a stopped cluster: %v", err)
	}

	// Start again through the method: same port, same data.
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	checkValue(t, ctx, c.URL("app"))
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	// And through a new Start on the directory: the port file is reused.
	c3, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c3.Port() != port {
		t.Fatalf("restarted on port %d, want %d", c3.Port(), port)
	}
	checkValue(t, ctx, c3.URL("app"))

	if err := c3.DropDatabase(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if err := c3.DropDatabase(ctx, "app"); err != nil {
		t.Fatalf("second DropDatabase: %v", err)
	}
	if err := c3.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory left after Remove: %v", err)
	}
}

func checkValue(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	conn := connect(t, ctx, url)
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM kv WHERE k = 'a'").Scan(&v); err != nil || v != "héllo" {
		t.Fatalf("value = %q, %v; want héllo", v, err)
	}
}

// TestAttachedTemplateAndKill covers the mode used by tests: attached
// server, databases cloned from a template, crash and restart.
func TestAttachedTemplateAndKill(t *testing.T) {
	ctx := testContext(t)
	c, err := Start(ctx, Options{Dir: t.TempDir(), Attached: true, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove(context.Background()) })

	if err := c.CreateDatabase(ctx, "tmpl", ""); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, ctx, c.URL("tmpl"))
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx) // its backend may linger: CreateDatabase retries
	if err := c.CreateDatabase(ctx, "copy", "tmpl"); err != nil {
		t.Fatal(err)
	}
	var x int
	if err := connect(t, ctx, c.URL("copy")).QueryRow(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 42 {
		t.Fatalf("x = %d, %v", x, err)
	}

	port := c.Port()
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if c.Running() {
		t.Fatal("running after Kill")
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Port() != port {
		t.Fatalf("port %d after restart, want %d", c.Port(), port)
	}
	if err := connect(t, ctx, c.URL("copy")).QueryRow(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 42 {
		t.Fatalf("after restart x = %d, %v", x, err)
	}
}

// TestAttachedDiesWithParent kills a process that started an attached cluster
// and checks that its server goes away too.
func TestAttachedDiesWithParent(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx := testContext(t)
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperAttached$", "-test.v")
	cmd.Env = append(os.Environ(), "CLUSTER_HELPER_DIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	pid := 0
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "POSTMASTER "); ok {
			pid, _ = strconv.Atoi(s)
			break
		}
	}
	if pid == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("helper did not start a cluster")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("postmaster %d still running 30 s after its parent was killed", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestHelperAttached(t *testing.T) {
	dir := os.Getenv("CLUSTER_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process for TestAttachedDiesWithParent")
	}
	c, err := Start(context.Background(), Options{Dir: dir, Attached: true, Log: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := readPidFile(c.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("POSTMASTER %s\n", strings.TrimSpace(lines[0]))
	time.Sleep(time.Minute)
}

func TestParseMajor(t *testing.T) {
	for in, want := range map[string]int{"15": 15, "15.8\n": 15, "9.6": 906, "17devel": 0, "x": 0} {
		if got := parseMajor(in); got != want {
			t.Errorf("parseMajor(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestFindBinaries(t *testing.T) {
	dir, err := FindBinaries(context.Background(), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if !complete(dir) {
		t.Fatalf("%s lacks server binaries", dir)
	}
}
