package main

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/cluster"
)

// devDataDir is where `make run` keeps its project-local PostgreSQL cluster.
const devDataDir = ".data"

// devDatabase is the database inside the project-local cluster.
const devDatabase = "switchboard"

// databaseURL returns url, or when it is empty the URL of the project-local cluster under
// ./.data, which it creates and starts as needed (the default of --database-url).
func databaseURL(ctx context.Context, url string, log *zap.Logger) (string, error) {
	if url != "" {
		return url, nil
	}
	if v := os.Getenv("DATABASE_URL"); v != "" {
		return v, nil
	}
	c, err := cluster.Start(ctx, cluster.Options{Dir: devDataDir, Fsync: true, Log: log.Named("cluster"),
		Settings: map[string]string{"max_connections": "200"}})
	if err != nil {
		return "", fmt.Errorf("start the project-local PostgreSQL under %s: %w", devDataDir, err)
	}
	if err := c.CreateDatabase(ctx, devDatabase, ""); err != nil {
		return "", err
	}
	log.Info("project-local database ready", zap.String("dir", c.Dir()), zap.Int("port", c.Port()))
	return c.URL(devDatabase), nil
}

// connectDB resolves the URL and connects, without migrating: for the migrate commands.
func connectDB(ctx context.Context, url string, log *zap.Logger) (*persistence.DB, error) {
	u, err := databaseURL(ctx, url, log)
	if err != nil {
		return nil, err
	}
	return persistence.Open(ctx, u, log.Named("db"))
}

// openDB resolves the URL, connects and migrates.
func openDB(ctx context.Context, url string, log *zap.Logger) (*persistence.DB, error) {
	db, err := connectDB(ctx, url, log)
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// databaseFlag declares the --database-url flag of a command that works on the database.
func databaseFlag(f flags) *string {
	return f.String("database-url", "", "PostgreSQL URL (default: the project-local cluster)")
}

// parseOpenDB parses a command's arguments, then opens (connects and migrates) the database
// its --database-url names: the start of every command that works on the database.
func parseOpenDB(ctx context.Context, f flags, args []string, dbURL *string) (*persistence.DB, error) {
	if err := f.parse(args); err != nil {
		return nil, err
	}
	return openDB(ctx, *dbURL, newLogger())
}
