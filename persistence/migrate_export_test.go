package persistence

import (
	"context"
	"io/fs"
)

// MigrateWith applies the embedded migrations and those of dir in extra, as Migrate does:
// for tests of the runner with migrations that the binary must not carry.
func (db *DB) MigrateWith(ctx context.Context, extra fs.FS, dir string) ([]int, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	more, err := migrationsIn(extra, dir)
	if err != nil {
		return nil, err
	}
	return db.migrate(ctx, append(migs, more...))
}

// SplitStatements returns the statements splitStatements finds and their lines.
func SplitStatements(sql string) ([]string, []int) {
	var out []string
	var lines []int
	for _, s := range splitStatements(sql) {
		out = append(out, s.sql)
		lines = append(lines, s.line)
	}
	return out, lines
}

// MigrateBelow applies the embedded migrations numbered below version: a database as an
// older release left it, for tests of a migration that converts existing data.
func (db *DB) MigrateBelow(ctx context.Context, version int) ([]int, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	var below []Migration
	for _, m := range migs {
		if m.Version < version {
			below = append(below, m)
		}
	}
	return db.migrate(ctx, below)
}
