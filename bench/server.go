package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"
)

func postgresVersion(ctx context.Context, url string) string {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "unknown"
	}
	defer conn.Close(ctx)
	var v string
	if conn.QueryRow(ctx, `SELECT version()`).Scan(&v) != nil {
		return "unknown"
	}
	if i := strings.Index(v, " on "); i > 0 {
		v = v[:i]
	}
	return v
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// server is the `switchboard serve` child and the floor child.
type server struct {
	cmd         *exec.Cmd
	done        chan struct{}
	logPath     string
	dbURL       string
	loaded      time.Duration
	floor       *exec.Cmd
	floorClient *fasthttp.HostClient
	mem         *memoryTrace // its resident memory from its start
	adminAddr   string       // its --admin-addr ("": none)
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// metricsAddr is where the server serves /metrics: its admin listener, else addr.
func (s *server) metricsAddr(addr string) string {
	if s.adminAddr != "" {
		return s.adminAddr
	}
	return addr
}

func (s *server) signal(sig syscall.Signal) { _ = s.cmd.Process.Signal(sig) }

// stop ends the server with SIGTERM (a graceful shutdown), SIGKILL after 20 s.
func (s *server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.mem.finish()
	s.stopFloor()
}

func startServer(ctx context.Context, o Options, addr, dbURL, profile, logPath string) (*server, error) {
	// The speeder rule is off: the bench answers sessions seconds after their entry, so every
	// complete would be a speeder (a quality signal, its own durable transaction, and soon a
	// blocked participant), where a real marketplace has a few (docs/quality.md).
	args := []string{"serve", "--addr", addr, "--database-url", dbURL, "--rate-limit", "-1", "--publisher-rate-limit", "-1",
		"--speeder-fraction", "-1"}
	if o.MemoryLimit != "" {
		args = append(args, "--memory-limit", o.MemoryLimit)
	}
	if o.Allocation != "" {
		args = append(args, "--allocation", o.Allocation)
	}
	args = append(args, o.serveArgs...)
	if profile != "" {
		wrap := []string{"bench", "_serve", "--cpu-profile", profile}
		if o.profileFromStart {
			wrap = append(wrap, "--cpu-profile-from-start")
		}
		args = append(append(wrap, "--"), args...)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "SWITCHBOARD_LOG_LEVEL=warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	o.progress("starting %s %s", o.Binary, strings.Join(args, " "))
	start := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{}), logPath: logPath, dbURL: dbURL,
		mem: traceMemory(cmd.Process.Pid, start, MemoryEvery)}
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	c := NewClient(addr, 1)
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("/readyz")
	req.Header.SetHost(addr)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("server exited before ready: %s", tail(logPath))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		default:
		}
		if err := c.DoTimeout(req, resp, 5*time.Second); err == nil && resp.StatusCode() == fasthttp.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("server not ready after 10 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.loaded = time.Since(start)
	s.mem.mark("ready", s.loaded)
	return s, nil
}

// startFloor runs `switchboard bench _floor` answering a body of size bytes. The listening
// socket is opened here and handed to the child, so no other process can take the port
// between choosing it and serving on it (a loaded machine runs many tests at once).
func (s *server) startFloor(ctx context.Context, o Options, size int) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	f, err := ln.(*net.TCPListener).File()
	addr := ln.Addr().String()
	ln.Close() // the child holds its own copy of the socket through f
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(o.Binary, "bench", "_floor", "--inherited-listener", "--bytes", strconv.Itoa(size))
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.floor = cmd
	s.floorClient = NewClient(addr, max(o.Connections, o.OpenConnections))
	_ = ctx
	return nil
}

func (s *server) stopFloor() {
	if s.floor == nil {
		return
	}
	_ = s.floor.Process.Kill()
	_ = s.floor.Wait()
	s.floor = nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
