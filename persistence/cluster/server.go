package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// shutdown stops the server in mode (pg_ctl's -m; sig for a postmaster
// started Attached) and waits until it has exited.
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

// startDetached starts the server with pg_ctl: it outlives this process.
func (c *Cluster) startDetached(ctx context.Context) error {
	cmd := c.command(ctx, "pg_ctl", "start", "-D", c.dataDir, "-l", c.LogFile(), "-w", "-t", "120", "-s")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startAttached starts the postmaster as a child that shuts down when this
// process dies, and waits until it is ready.
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
