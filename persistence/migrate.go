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

// NoTransaction is the first line of a migration that must run outside a transaction
// (CREATE INDEX CONCURRENTLY, ALTER TYPE ... ADD VALUE before PostgreSQL 12, VACUUM): its
// statements run one by one, each in its own implicit transaction. The version is recorded
// only after the last one succeeds, so a failed run is repeated from the first statement:
// such a file must be re-runnable (DROP INDEX CONCURRENTLY IF EXISTS before CREATE INDEX
// CONCURRENTLY, since a failed concurrent build leaves an invalid index behind).
const NoTransaction = "-- switchboard:no-transaction"

// Migration is one numbered schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
	// NoTransaction: the file starts with the NoTransaction line.
	NoTransaction bool
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	return migrationsIn(migrationFS, "migrations")
}

// migrationsIn reads the migrations of dir in fsys, in version order.
func migrationsIn(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
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
		body, err := fs.ReadFile(fsys, dir+"/"+name)
		if err != nil {
			return nil, err
		}
		first, _, _ := strings.Cut(string(body), "\n")
		out = append(out, Migration{Version: v, Name: name, SQL: string(body),
			NoTransaction: strings.TrimSpace(first) == NoTransaction})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share a version", out[i-1].Name, out[i].Name)
		}
	}
	return out, nil
}

// Migrate applies every migration not yet applied, each in its own transaction (or
// statement by statement, see NoTransaction), while holding a session advisory lock so that
// processes starting together do not race. It returns the versions it applied.
func (db *DB) Migrate(ctx context.Context) ([]int, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	return db.migrate(ctx, migs)
}

func (db *DB) migrate(ctx context.Context, migs []Migration) ([]int, error) {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, classify(err)
	}
	defer conn.Release()
	// Polled rather than waited for: a session waiting in pg_advisory_lock holds a snapshot,
	// and CREATE INDEX CONCURRENTLY in the holder's no-transaction migration waits for every
	// older snapshot to end, a deadlock (found when 0037 met TestMigrateConcurrently).
	for {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(migrationLock)).Scan(&got); err != nil {
			return nil, classify(err)
		}
		if got {
			break
		}
		select {
		case <-ctx.Done():
			return nil, classify(ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
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
		if m.NoTransaction {
			if err := runNoTransaction(ctx, conn.Conn(), m); err != nil {
				return done, err
			}
		} else {
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
		}
		db.log.Info("migration applied", zap.Int("version", m.Version), zap.String("name", m.Name))
		done = append(done, m.Version)
	}
	return done, nil
}

// runNoTransaction runs the statements of a NoTransaction migration one by one, then records
// it. A failure names the statement and its line, and says what took effect.
func runNoTransaction(ctx context.Context, conn *pgx.Conn, m Migration) error {
	stmts := splitStatements(m.SQL)
	for i, st := range stmts {
		if _, err := conn.Exec(ctx, st.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			return fmt.Errorf("migration %s (no transaction): statement %d of %d (line %d) failed, the %d before it took effect "+
				"and the whole file runs again next time: %w", m.Name, i+1, len(stmts), st.line, i, err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return fmt.Errorf("migration %s (no transaction): record it: %w", m.Name, err)
	}
	return nil
}

// statement is one statement of a migration and the line it starts on.
type statement struct {
	sql  string
	line int
}

// splitStatements splits SQL at the semicolons that end statements: those outside quotes
// ('…', "…"), dollar quotes ($$…$$, $tag$…$tag$) and comments (-- …, /* … */). Statements
// holding only comments and space are dropped.
func splitStatements(sql string) []statement {
	var out []statement
	start, line, startLine := 0, 1, 1
	meaningful := false
	flush := func(end int) {
		if meaningful {
			out = append(out, statement{sql: strings.TrimSpace(sql[start:end]), line: startLine})
		}
		start, meaningful = end, false
	}
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		skipTo := func(j int) { // moves i to j-1, counting lines
			if j < 0 {
				j = len(sql)
			}
			line += strings.Count(sql[i:j], "\n")
			i = j - 1
		}
		switch {
		case c == '\n':
			line++
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			skipTo(indexFrom(sql, i, "\n"))
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			j := indexFrom(sql, i+2, "*/")
			if j >= 0 {
				j += 2
			}
			skipTo(j)
		case c == '\'' || c == '"':
			if !meaningful {
				startLine = line
			}
			meaningful = true
			j := i + 1
			for j < len(sql) {
				if sql[j] == c {
					if j+1 < len(sql) && sql[j+1] == c { // doubled quote
						j += 2
						continue
					}
					break
				}
				j++
			}
			skipTo(min(j+1, len(sql)))
		case c == '$':
			if !meaningful {
				startLine = line
			}
			meaningful = true
			if tag, ok := dollarTag(sql[i:]); ok {
				j := indexFrom(sql, i+len(tag), tag)
				if j >= 0 {
					j += len(tag)
				}
				skipTo(j)
			}
		case c == ';':
			flush(i + 1)
		case c == ' ' || c == '\t' || c == '\r':
		default:
			if !meaningful {
				startLine = line
			}
			meaningful = true
		}
	}
	flush(len(sql))
	return out
}

// indexFrom is the index of sub in s at or after from, or -1.
func indexFrom(s string, from int, sub string) int {
	j := strings.Index(s[from:], sub)
	if j < 0 {
		return -1
	}
	return from + j
}

// dollarTag returns the dollar-quote opener at the start of s ($$ or $tag$), if any.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1], true
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 1 && c >= '0' && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
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
