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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
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
	c := &Cluster{dir: dir, dataDir: filepath.Join(dir, dataSubdir), opts: o, log: log.With(zap.String("dir", dir))}

	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	version := dataVersion(c.dataDir)
	if o.BinDir != "" {
		c.binDir = o.BinDir
	} else {
		b, err := findBinaries(ctx, c.log, version)
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if version != 0 && b.major != 0 && b.major != version {
			return nil, fmt.Errorf("cluster: %s was created by PostgreSQL %d but the server binaries found (%s) are version %d: install PostgreSQL %d or remove the directory",
				c.dataDir, version, b.dir, b.major, version)
		}
		c.binDir = b.dir
	}

	if c.run, err = chooseRunner(c.dataDir); err != nil {
		return nil, err
	}
	if err := c.prepareDir(); err != nil {
		return nil, err
	}

	if pid, port, ok := runningPostmaster(c.dataDir); ok {
		c.port = port
		if o.Port != 0 && o.Port != port {
			c.log.Warn("postgres cluster already running on another port", zap.Int("port", port), zap.Int("requested_port", o.Port))
		}
		if err := c.waitReady(ctx, nil); err != nil {
			return nil, err
		}
		c.writePortFile()
		c.log.Info("postgres cluster already running", zap.Int("pid", pid), zap.Int("port", port))
		return c, nil
	}

	if version == 0 {
		if err := c.initdb(ctx); err != nil {
			return nil, err
		}
	}

	port, auto := o.Port, false
	if port == 0 {
		port = readPortFile(dir)
		if port != 0 && !portFree(port) {
			c.log.Warn("postgres cluster port taken by another process, choosing another", zap.Int("port", port))
			port = 0
		}
	}
	for attempt := 1; ; attempt++ {
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, fmt.Errorf("cluster: choose a port: %w", err)
			}
			auto = true
		}
		c.port = port
		err = c.start(ctx)
		if err == nil {
			break
		}
		// Another process may have bound the port between freePort and the
		// server's bind: choose another one.
		if auto && attempt < 5 && errors.Is(err, errPortInUse) {
			c.log.Warn("postgres cluster port taken meanwhile, choosing another", zap.Int("port", port))
			port = 0
			continue
		}
		return nil, err
	}
	c.writePortFile()
	return c, nil
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

func (c *Cluster) shutdown(ctx context.Context, mode string, sig syscall.Signal) error {
	c.mu.Lock()
	proc := c.proc
	c.mu.Unlock()
	if proc != nil {
		select {
		case <-proc.done:
		default:
			_ = syscall.Kill(proc.pid, sig)
			select {
			case <-proc.done:
			case <-ctx.Done():
				_ = syscall.Kill(proc.pid, syscall.SIGKILL)
				<-proc.done
				return fmt.Errorf("cluster: stop: %w", ctx.Err())
			}
		}
		c.log.Info("postgres cluster stopped", zap.String("mode", mode))
		return nil
	}
	if _, _, ok := runningPostmaster(c.dataDir); !ok {
		return nil
	}
	out, err := c.command(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", mode, "-w", "-t", "120", "-s").CombinedOutput()
	if err != nil {
		if _, _, ok := runningPostmaster(c.dataDir); !ok {
			return nil
		}
		return fmt.Errorf("cluster: pg_ctl stop: %w: %s", err, strings.TrimSpace(string(out)))
	}
	c.log.Info("postgres cluster stopped", zap.String("mode", mode))
	return nil
}

// errPortInUse marks a start that failed because the port was taken.
var errPortInUse = errors.New("port in use")

// start writes the settings and starts the server on c.port. The caller holds
// the directory lock.
func (c *Cluster) start(ctx context.Context) error {
	if err := c.writeConf(); err != nil {
		return err
	}
	logPath := c.LogFile()
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("cluster: open log: %w", err)
	}
	defer lf.Close()
	c.run.chown(logPath)
	logStart, _ := lf.Seek(0, io.SeekEnd)

	began := time.Now()
	if c.opts.Attached {
		err = c.startAttached(ctx, lf)
	} else {
		err = c.startDetached(ctx)
	}
	if err != nil {
		serverLog := readFrom(logPath, logStart)
		if strings.Contains(serverLog, "Address already in use") {
			err = fmt.Errorf("%w: %w", errPortInUse, err)
		}
		return fmt.Errorf("cluster: start postgres on port %d: %w\nserver log (%s):\n%s", c.port, err, logPath, tail(serverLog, 4000))
	}
	c.log.Info("postgres cluster started", zap.Int("port", c.port), zap.Bool("attached", c.opts.Attached),
		zap.Duration("took", time.Since(began)))
	return nil
}

func (c *Cluster) startDetached(ctx context.Context) error {
	cmd := c.command(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", c.LogFile(), "-w", "-t", "120", "-s")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) startAttached(ctx context.Context, logf *os.File) error {
	cmd := c.command(context.Background(), "postgres", "-D", c.dataDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The server gets SIGINT (fast shutdown) when this process dies. The signal
	// is tied to the OS thread that forked the child, so the fork happens on a
	// locked thread that stays alive (waiting for the child) as long as the
	// child runs.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	started := make(chan error, 1)
	p := &child{done: make(chan struct{})}
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		_ = cmd.Wait()
		close(p.done)
		// Returning while locked ends the thread, which is what we want:
		// it must not be reused with a stale parent-death registration.
	}()
	if err := <-started; err != nil {
		return err
	}
	c.mu.Lock()
	c.proc = p
	c.mu.Unlock()
	if err := c.waitReady(ctx, p); err != nil {
		_ = syscall.Kill(p.pid, syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		return err
	}
	return nil
}

// waitReady waits until postmaster.pid reports the server ready for
// connections, or p (when not nil) exits.
func (c *Cluster) waitReady(ctx context.Context, p *child) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if lines, err := readPidFile(c.dataDir); err == nil && len(lines) >= 8 {
			pid, _ := strconv.Atoi(lines[0])
			if strings.TrimSpace(lines[7]) == "ready" && (p == nil || pid == p.pid) {
				return nil
			}
		}
		if p != nil {
			select {
			case <-p.done:
				return errors.New("postgres exited during startup")
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready: %w", ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Cluster) initdb(ctx context.Context) error {
	// A directory left by an initdb that did not finish holds no cluster.
	if entries, err := os.ReadDir(c.dataDir); err == nil && len(entries) > 0 {
		c.log.Warn("removing incomplete postgres data directory", zap.String("data_dir", c.dataDir))
		if err := os.RemoveAll(c.dataDir); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
	}
	args := []string{"-D", c.dataDir, "-U", Superuser, "--auth=trust", "-E", "UTF8", "--locale=C"}
	if !c.opts.Fsync {
		args = append(args, "--no-sync")
	}
	began := time.Now()
	out, err := c.command(ctx, "initdb", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster: initdb %s: %w\n%s", c.dataDir, err, tail(string(out), 4000))
	}
	conf := filepath.Join(c.dataDir, "postgresql.conf")
	f, err := os.OpenFile(conf, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Written by switchboard: settings for this cluster, rewritten at every start.\ninclude_if_exists = '%s'\n", confFile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c.log.Info("postgres cluster created", zap.String("data_dir", c.dataDir), zap.String("bin_dir", c.binDir),
		zap.String("run_as", c.run.name), zap.Duration("took", time.Since(began)))
	return nil
}

// writeConf writes the settings file included by postgresql.conf.
func (c *Cluster) writeConf() error {
	settings := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"port":                    strconv.Itoa(c.port),
		"unix_socket_directories": "",
	}
	if len(c.dir)+len("/.s.PGSQL.65535.lock") <= maxSocketPath {
		settings["unix_socket_directories"] = c.dir
	}
	if !c.opts.Fsync {
		settings["fsync"] = "off"
		settings["synchronous_commit"] = "off"
		settings["full_page_writes"] = "off"
	}
	for k, v := range c.opts.Settings {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		if !validSettingName(k) {
			return fmt.Errorf("cluster: invalid setting name %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by switchboard at every start; edits are overwritten.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(settings[k], "'", "''"))
	}
	path := filepath.Join(c.dataDir, confFile)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("cluster: write settings: %w", err)
	}
	c.run.chown(path)
	return nil
}

func validSettingName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// command builds a command running binary name from the server binaries as the
// cluster's user.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = c.dir
	cmd.Env = serverEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if c.run.cred != nil {
		cmd.SysProcAttr.Credential = c.run.cred
	}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// serverEnv is this process's environment without libpq's PG* variables,
// which would change what pg_ctl and postgres do.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runner is the user the server runs as: this process's own user, or, when
// this process is root, an unprivileged one.
type runner struct {
	name string
	uid  int
	gid  int
	cred *syscall.Credential // nil: run as this process's user
}

// chooseRunner picks the user to run the server as.
func chooseRunner(dataDir string) (runner, error) {
	if os.Geteuid() != 0 {
		u, _ := user.Current()
		name := strconv.Itoa(os.Geteuid())
		if u != nil {
			name = u.Username
		}
		return runner{name: name, uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	// Keep the owner of an existing data directory.
	if st, err := os.Stat(dataDir); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
			name := strconv.Itoa(int(sys.Uid))
			if u, err := user.LookupId(name); err == nil {
				name = u.Username
			}
			return newRunner(name, int(sys.Uid), int(sys.Gid)), nil
		}
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return newRunner(name, uid, gid), nil
	}
	return runner{}, errors.New("cluster: running as root, and neither user \"postgres\" nor \"nobody\" exists to run PostgreSQL as (it refuses to run as root)")
}

func newRunner(name string, uid, gid int) runner {
	return runner{name: name, uid: uid, gid: gid,
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
}

// chown gives path to the runner when it is another user.
func (r runner) chown(path string) {
	if r.cred != nil {
		_ = os.Lchown(path, r.uid, r.gid)
	}
}

// prepareDir makes c.dir usable by the runner: owned by it, and every parent
// directory traversable by it.
func (c *Cluster) prepareDir() error {
	if c.run.cred == nil {
		return nil
	}
	st, err := os.Stat(c.dir)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && (int(sys.Uid) != c.run.uid || int(sys.Gid) != c.run.gid) {
		err := filepath.WalkDir(c.dir, func(path string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, c.run.uid, c.run.gid)
		})
		if err != nil {
			return fmt.Errorf("cluster: give %s to user %s: %w", c.dir, c.run.name, err)
		}
	}
	if err := os.Chmod(c.dir, 0o700); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for p := filepath.Dir(c.dir); ; p = filepath.Dir(p) {
		if err := c.makeTraversable(p); err != nil {
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// makeTraversable adds the search permission the runner needs on directory p.
func (c *Cluster) makeTraversable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	mode := st.Mode().Perm()
	var bit os.FileMode
	switch {
	case int(sys.Uid) == c.run.uid:
		bit = 0o100
	case int(sys.Gid) == c.run.gid:
		bit = 0o010
	default:
		bit = 0o001
	}
	if mode&bit != 0 {
		return nil
	}
	c.log.Warn("making directory traversable for the postgres server user",
		zap.String("path", p), zap.String("user", c.run.name),
		zap.String("old_mode", fmt.Sprintf("%#o", uint32(mode))), zap.String("new_mode", fmt.Sprintf("%#o", uint32(mode|bit))))
	if err := os.Chmod(p, mode|bit|st.Mode()&(os.ModeSticky|os.ModeSetgid|os.ModeSetuid)); err != nil {
		return fmt.Errorf("cluster: %s is not traversable by user %s, who runs PostgreSQL, and could not be made so (%w): choose a directory outside it", p, c.run.name, err)
	}
	return nil
}

// lockDir takes an exclusive lock on dir's lock file until unlock is called.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cluster: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("cluster: lock: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// dataVersion is the major version of the cluster in dataDir, 0 when there is
// none.
func dataVersion(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return 0
	}
	return parseMajor(string(b))
}

// readPidFile returns the lines of postmaster.pid.
func readPidFile(dataDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}

// runningPostmaster returns the pid and port of the postmaster running on
// dataDir, if one does.
func runningPostmaster(dataDir string) (pid, port int, ok bool) {
	lines, err := readPidFile(dataDir)
	if err != nil || len(lines) < 4 {
		return 0, 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid <= 0 {
		return 0, 0, false
	}
	if !processAlive(pid) {
		return 0, 0, false
	}
	port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	return pid, port, true
}

// processAlive reports whether pid is a live PostgreSQL process.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A stale pid file may name a pid reused by another program.
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		name := strings.TrimSpace(string(comm))
		if !strings.Contains(name, "postgres") && !strings.Contains(name, "postmaster") {
			return false
		}
	}
	// A zombie (exited, not yet reaped by its parent) is not running.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return true
}

func readPortFile(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, portFile))
	if err != nil {
		return 0
	}
	p, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || p <= 0 || p > 65535 {
		return 0
	}
	return p
}

func (c *Cluster) writePortFile() {
	path := filepath.Join(c.dir, portFile)
	if err := os.WriteFile(path, []byte(strconv.Itoa(c.Port())+"\n"), 0o644); err != nil {
		c.log.Warn("could not record postgres cluster port", zap.Error(err))
		return
	}
	c.run.chown(path)
}

// freePort returns a TCP port free at the moment on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFree reports whether port can be bound on 127.0.0.1.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// readFrom returns the content of path from offset on (the log of one start).
func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String()
}
