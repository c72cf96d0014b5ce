package pgtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestURLIsolated: parallel tests each get their own migrated database.
func TestURLIsolated(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			url := URL(t)
			mu.Lock()
			if seen[url] {
				t.Errorf("URL %s handed out twice", url)
			}
			seen[url] = true
			mu.Unlock()
			conn := connect(t, url)
			ctx := context.Background()
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n == 0 {
				t.Fatalf("template not migrated: %d migrations, %v", n, err)
			}
			if _, err := conn.Exec(ctx, "CREATE TABLE mine (x int)"); err != nil {
				t.Fatalf("database shared with another test: %v", err)
			}
		})
	}
}

func TestEmptyURL(t *testing.T) {
	conn := connect(t, EmptyURL(t))
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("empty database has %d tables, %v", n, err)
	}
}

// TestDropAtCleanup: a test's database is gone after the test, even with a
// connection left open.
func TestDropAtCleanup(t *testing.T) {
	var url string
	t.Run("inner", func(t *testing.T) {
		url = URL(t)
		connect(t, url)
		leaked, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		_ = leaked // left open on purpose: the drop must force it
	})
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	name := cfg.Database
	conn := connect(t, EmptyURL(t))
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("database %s still exists (%d), %v", name, n, err)
	}
}

// TestOutage: the cluster stops under an open connection and comes back on
// the same URL with the data.
func TestOutage(t *testing.T) {
	c := Cluster(t)
	url := URL(t)
	ctx := context.Background()
	conn := connect(t, url)
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, url); err == nil {
		t.Fatal("connected to a stopped cluster")
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var x int
	if err := connect(t, url).QueryRow(ctx, "SELECT x FROM kept").Scan(&x); err != nil || x != 7 {
		t.Fatalf("x = %d, %v", x, err)
	}
	// Left stopped on purpose: Cluster's cleanup starts it again for the
	// next tests.
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAfterOutage runs after TestOutage: the cluster is back.
func TestAfterOutage(t *testing.T) {
	connect(t, URL(t))
}

func TestDatabaseURLFunc(t *testing.T) {
	f, err := databaseURLFunc("postgres://u:p@h:5/db?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	if got := f("x"); got != "postgres://u:p@h:5/x?sslmode=disable" {
		t.Errorf("got %s", got)
	}
	f, err = databaseURLFunc("host=h port=5 user=u dbname=db")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(f("x"))
	if err != nil || cfg.Database != "x" {
		t.Errorf("dsn database = %v, %v", cfg, err)
	}
}
