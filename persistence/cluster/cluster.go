// Package cluster runs a project-local PostgreSQL cluster from the server
// binaries installed on the machine (installing them when missing and
// running as root).
//
// Layout of Options.Dir:
//
//	pgdata/          the PostgreSQL data directory (initdb'd on first use)
//	pgdata/switchboard.conf  settings written at every start (port, listen address, ...)
//	port             the port chosen on first start, reused afterwards
//	postgres.log     the server log
//	.s.PGSQL.<port>  the unix socket (when the path is short enough)
//	.lock            serialises Start between processes
//
// When the process runs as root the server runs as the user "postgres"
// (fallback "nobody"), since PostgreSQL refuses to run as root; Dir is chowned
// to that user and its parent directories are made traversable.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Superuser is the name of the cluster's superuser (auth is trust on loopback).
const Superuser = "switchboard"

const (
	dataSubdir = "pgdata"
	portFile   = "port"
	logFile    = "postgres.log"
	lockFile   = ".lock"
	confFile   = "switchboard.conf"
	// maxSocketPath is the longest unix socket path the kernel accepts
	// (sun_path is 108 bytes including the terminating NUL).
	maxSocketPath = 107
)

// Options configure Start.
type Options struct {
	// Dir holds the cluster (see the package doc). Created when missing.
	Dir string
	// Port to listen on at 127.0.0.1. 0: the port of the last start (kept in
	// Dir/port), else a free one.
	Port int
	// Fsync keeps fsync, synchronous_commit and full_page_writes on. Off is
	// for throwaway clusters (tests): fast, but not crash-safe.
	Fsync bool
	// Settings are extra server settings, e.g. {"max_connections": "200",
	// "shared_buffers": "64MB"}.
	Settings map[string]string
	// Attached ties the server's life to this process: the postmaster runs as
	// a child that shuts down when this process exits, even when it is killed.
	// For test clusters. Otherwise the server is started with pg_ctl and keeps
	// running after this process exits (a later Start reuses it).
	Attached bool
	// BinDir is the directory of initdb, pg_ctl and postgres; empty: found
	// automatically (see FindBinaries).
	BinDir string
	// Log receives progress messages; nil: none.
	Log *zap.Logger
}

// Cluster is a PostgreSQL cluster started (or found running) by Start.
type Cluster struct {
	dir, dataDir, binDir string
	opts                 Options
	log                  *zap.Logger
	run                  runner

	mu   sync.Mutex
	port int
	proc *child // the postmaster when started Attached by this process
}

// child is a postmaster started in Attached mode.
type child struct {
	pid  int
	done chan struct{} // closed when the process has exited
}

// Start returns the cluster in o.Dir: created when the directory holds none,
// started when it is not running, reused as it is when it runs already.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	c, err := newCluster(o)
	if err != nil {
		return nil, err
	}
	unlock, err := lockDir(c.dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	version := dataVersion(c.dataDir)
	if err := c.useBinaries(ctx, version); err != nil {
		return nil, err
	}
	if c.run, err = chooseRunner(c.dataDir); err != nil {
		return nil, err
	}
	if err := c.prepareDir(); err != nil {
		return nil, err
	}
	if pid, port, ok := runningPostmaster(c.dataDir); ok {
		if err := c.adopt(ctx, pid, port); err != nil {
			return nil, err
		}
		return c, nil
	}
	if version == 0 {
		if err := c.initdb(ctx); err != nil {
			return nil, err
		}
	}
	if err := c.startOnFreePort(ctx); err != nil {
		return nil, err
	}
	c.writePortFile()
	return c, nil
}

// newCluster returns the cluster of o.Dir, creating the directory when
// missing.
func newCluster(o Options) (*Cluster, error) {
	if o.Dir == "" {
		return nil, errors.New("cluster: Options.Dir is empty")
	}
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: create directory: %w", err)
	}
	return &Cluster{dir: dir, dataDir: filepath.Join(dir, dataSubdir), opts: o, log: log.With(zap.String("dir", dir))}, nil
}

// useBinaries sets the server binaries to Options.BinDir, else to those
// found for the data directory's major version (0: none yet), which must
// match it.
func (c *Cluster) useBinaries(ctx context.Context, version int) error {
	if c.opts.BinDir != "" {
		c.binDir = c.opts.BinDir
		return nil
	}
	b, err := findBinaries(ctx, c.log, version)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if version != 0 && b.major != 0 && b.major != version {
		return fmt.Errorf("cluster: %s was created by PostgreSQL %d but the server binaries found (%s) are version %d: install PostgreSQL %d or remove the directory",
			c.dataDir, version, b.dir, b.major, version)
	}
	c.binDir = b.dir
	return nil
}

// adopt takes over the postmaster pid already running on the data directory
// on port, once it is ready.
func (c *Cluster) adopt(ctx context.Context, pid, port int) error {
	c.port = port
	if c.opts.Port != 0 && c.opts.Port != port {
		c.log.Warn("postgres cluster already running on another port", zap.Int("port", port), zap.Int("requested_port", c.opts.Port))
	}
	if err := c.waitReady(ctx, nil); err != nil {
		return err
	}
	c.writePortFile()
	c.log.Info("postgres cluster already running", zap.Int("pid", pid), zap.Int("port", port))
	return nil
}

// Start starts the cluster again after Stop or Kill, on the same port and
// data. It does nothing when the cluster is running.
func (c *Cluster) Start(ctx context.Context) error {
	unlock, err := lockDir(c.dir)
	if err != nil {
		return err
	}
	defer unlock()
	if _, _, ok := runningPostmaster(c.dataDir); ok {
		return nil
	}
	return c.start(ctx)
}

// URL is the connection URL of database on this cluster, as the superuser.
func (c *Cluster) URL(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port())),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// Port is the TCP port the cluster listens on at 127.0.0.1.
func (c *Cluster) Port() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.port
}

// Dir is the cluster's directory (Options.Dir, absolute).
func (c *Cluster) Dir() string { return c.dir }

// DataDir is the PostgreSQL data directory inside Dir.
func (c *Cluster) DataDir() string { return c.dataDir }

// LogFile is the path of the server log.
func (c *Cluster) LogFile() string { return filepath.Join(c.dir, logFile) }

// BinDir is the directory of the server binaries in use.
func (c *Cluster) BinDir() string { return c.binDir }

// Running reports whether the cluster's postmaster is alive.
func (c *Cluster) Running() bool {
	_, _, ok := runningPostmaster(c.dataDir)
	return ok
}

// IsRunning reports whether a postmaster runs on the cluster in dir (an
// Options.Dir), whoever started it.
func IsRunning(dir string) bool {
	_, _, ok := runningPostmaster(filepath.Join(dir, dataSubdir))
	return ok
}

// Stop shuts the server down (fast mode: open sessions are ended, committed
// data is kept) and waits until it has exited. Stopping a stopped cluster does
// nothing.
func (c *Cluster) Stop(ctx context.Context) error {
	return c.shutdown(ctx, "fast", syscall.SIGINT)
}

// Kill shuts the server down in immediate mode, as a crash would (the next
// start runs crash recovery), and waits until it has exited.
func (c *Cluster) Kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.shutdown(ctx, "immediate", syscall.SIGQUIT)
}

// Remove stops the cluster and deletes its directory.
func (c *Cluster) Remove(ctx context.Context) error {
	stopErr := c.Stop(ctx)
	if stopErr != nil {
		// Do not delete files under a server that may still run.
		if err := c.Kill(); err != nil {
			return errors.Join(stopErr, err)
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("cluster: remove %s: %w", c.dir, err)
	}
	c.log.Info("postgres cluster removed")
	return nil
}
