package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Execer runs a statement: a *pgx.Conn, a *pgxpool.Pool, ...
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// CreateDatabase creates database name, as a copy of template when template
// is not empty. A database that exists already is left as it is.
func (c *Cluster) CreateDatabase(ctx context.Context, name, template string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("cluster: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return CreateDatabaseOn(ctx, conn, name, template)
}

// DropDatabase drops database name, ending its sessions. A missing database
// is not an error.
func (c *Cluster) DropDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("cluster: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return DropDatabaseOn(ctx, conn, name)
}

// CreateDatabaseOn creates database name through db (a connection to any
// database of the server), as a copy of template when template is not empty.
// A database that exists already is left as it is. While the template still
// has sessions (a connection closed just before lingers for a moment), it
// retries for up to 10 s. Options are appended to the statement as they are
// (e.g. "STRATEGY FILE_COPY", PostgreSQL 15 and later).
func CreateDatabaseOn(ctx context.Context, db Execer, name, template string, options ...string) error {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	for _, o := range options {
		sql += " " + o
	}
	deadline := time.Now().Add(10 * time.Second)
	wait := 10 * time.Millisecond
	for {
		_, err := db.Exec(ctx, sql)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &pgErr) && pgErr.Code == "42P04": // duplicate_database
			return nil
		case errors.As(err, &pgErr) && pgErr.Code == "55006" && time.Now().Before(deadline): // object_in_use
			if template != "" {
				terminateSessions(ctx, db, template)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cluster: create database %s: %w", name, err)
			case <-time.After(wait):
			}
			wait = min(2*wait, 200*time.Millisecond)
		default:
			return fmt.Errorf("cluster: create database %s: %w", name, err)
		}
	}
}

// DropDatabaseOn drops database name through db, ending its sessions.
// A missing database is not an error.
func DropDatabaseOn(ctx context.Context, db Execer, name string) error {
	ident := pgx.Identifier{name}.Sanitize()
	_, err := db.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42601" { // syntax_error: server older than 13
		terminateSessions(ctx, db, name)
		_, err = db.Exec(ctx, "DROP DATABASE IF EXISTS "+ident)
	}
	if err != nil {
		return fmt.Errorf("cluster: drop database %s: %w", name, err)
	}
	return nil
}

// terminateSessions ends the sessions connected to database name.
func terminateSessions(ctx context.Context, db Execer, name string) {
	_, _ = db.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name)
}
