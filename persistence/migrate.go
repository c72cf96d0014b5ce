package persistence

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the advisory-lock key that serializes migrations across processes.
const migrationLock = 7_300_451_001

// Migration is one numbered schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", name)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: %w", name, err)
		}
		body, err := fs.ReadFile(migrationFS, "migrations/"+name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share a version", out[i-1].Name, out[i].Name)
		}
	}
	return out, nil
}

// Migrate applies every migration not yet applied, each in its own transaction, while
// holding a session advisory lock so that processes starting together do not race.
// It returns the versions it applied.
func (db *DB) Migrate(ctx context.Context) ([]int, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, classify(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return nil, classify(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock)) //nolint:errcheck

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, err
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		applied[v] = true
	}
	if err := checkNotNewer(vs, migs); err != nil {
		return nil, err
	}
	var done []int
	for _, m := range migs {
		if applied[m.Version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("migration %s: %w", m.Name, err)
		}
		db.log.Info("migration applied", zap.Int("version", m.Version), zap.String("name", m.Name))
		done = append(done, m.Version)
	}
	return done, nil
}

// SchemaNewerError is the refusal to migrate or serve a database whose schema a newer
// binary has migrated past this one's newest migration: this binary would read and write
// columns and rules it does not know (a rollback of the binary without one of the schema).
type SchemaNewerError struct {
	Database int // highest migration applied to the database
	Binary   int // highest migration embedded in this binary
}

func (e *SchemaNewerError) Error() string {
	return fmt.Sprintf("database schema is at migration %04d, newer than this binary's newest migration %04d: "+
		"run a switchboard binary that has migration %04d", e.Database, e.Binary, e.Database)
}

// checkNotNewer returns a *SchemaNewerError when an applied version is beyond every
// embedded one.
func checkNotNewer(applied []int, migs []Migration) error {
	newest := 0
	if len(migs) > 0 {
		newest = migs[len(migs)-1].Version
	}
	top := 0
	for _, v := range applied {
		top = max(top, v)
	}
	if top > newest {
		return &SchemaNewerError{Database: top, Binary: newest}
	}
	return nil
}

// MigrationState is one migration as the database and this binary know it.
type MigrationState struct {
	Version   int
	Name      string
	AppliedAt time.Time // zero: pending
	// Embedded is false for a migration the database has and this binary lacks (applied
	// by a newer binary).
	Embedded bool
}

// Applied reports whether the database has the migration.
func (m MigrationState) Applied() bool { return !m.AppliedAt.IsZero() }

// MigrationStatus lists every migration this binary embeds or the database has applied, in
// version order, without changing anything: what `switchboard migrate status` prints.
func (db *DB) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*MigrationState{}
	for _, m := range migs {
		byVersion[m.Version] = &MigrationState{Version: m.Version, Name: m.Name, Embedded: true}
	}
	var exists bool
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, classify(err)
	}
	if exists {
		rows, err := db.Pool.Query(ctx, `SELECT version, name, applied_at FROM schema_migrations`)
		if err != nil {
			return nil, classify(err)
		}
		var v int
		var name string
		var at time.Time
		_, err = pgx.ForEachRow(rows, []any{&v, &name, &at}, func() error {
			st, ok := byVersion[v]
			if !ok {
				st = &MigrationState{Version: v, Name: name}
				byVersion[v] = st
			}
			st.AppliedAt = at
			return nil
		})
		if err != nil {
			return nil, classify(err)
		}
	}
	out := make([]MigrationState, 0, len(byVersion))
	for _, st := range byVersion {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// MigrateURL opens url, migrates and closes: for tools and test templates.
func MigrateURL(ctx context.Context, url string) error {
	db, err := Open(ctx, url, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Migrate(ctx)
	return err
}
