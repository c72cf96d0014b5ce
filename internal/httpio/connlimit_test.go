package httpio

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// dialFrom opens a connection to addr from the loopback address ip.
func dialFrom(t *testing.T, addr, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// request sends GET path on c and reads the answer, keeping c open.
func request(t *testing.T, c net.Conn, path string) *http.Response {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
	defer c.SetDeadline(time.Time{})               //nolint:errcheck
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body) //nolint:errcheck
	r.Body.Close()
	return r
}

// closedByServer reports whether the server closed c (a read ends in EOF or a reset within
// 2 s); a connection still open times out instead.
func closedByServer(c net.Conn, within time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(within)) //nolint:errcheck
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// waitIdle waits until the server holds n idle connections.
func waitIdle(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.conns.mu.Lock()
		got := 0
		for c := s.conns.all.idle.head; c != nil; c = c.links[allLink].next {
			got++
		}
		s.conns.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle connections, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// slowServer serves cfg on a real listener with a handler that answers /slow only when the
// test ends, and "ok" at once elsewhere.
func slowServer(t *testing.T, cfg ServerConfig) (*Server, string) {
	t.Helper()
	release := make(chan struct{})
	s := NewServer(func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/slow" {
			<-release
		}
		ctx.SetBodyString("ok")
	}, cfg, zap.NewNop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, s, ln)
	t.Cleanup(func() { close(release) }) // runs first: the handlers return before the shutdown
	return s, ln.Addr().String()
}

// TestConnLimitClosesIdleFirst: at the total limit a new connection makes room by closing
// the oldest idle keep-alive connection, then, with none idle, the oldest that sent nothing;
// with every connection busy it is refused. A connection busy with a request is never closed.
func TestConnLimitClosesIdleFirst(t *testing.T) {
	s, addr := slowServer(t, ServerConfig{MaxConns: 3, MaxConnsPerIP: -1})

	silent1 := dialFrom(t, addr, "127.0.0.1")
	time.Sleep(20 * time.Millisecond) // accepted in this order
	idle := dialFrom(t, addr, "127.0.0.1")
	request(t, idle, "/")
	waitIdle(t, s, 1)
	silent2 := dialFrom(t, addr, "127.0.0.1")
	time.Sleep(20 * time.Millisecond)

	// Full: the idle one goes, though silent1 is older.
	busy := dialFrom(t, addr, "127.0.0.1")
	if !closedByServer(idle, 2*time.Second) {
		t.Fatal("the idle keep-alive connection is still open at the limit")
	}
	if closedByServer(silent1, 50*time.Millisecond) || closedByServer(silent2, 50*time.Millisecond) {
		t.Fatal("a silent connection was closed while an idle one could go")
	}
	go io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n") //nolint:errcheck
	time.Sleep(50 * time.Millisecond)

	// Full, none idle: the oldest silent one goes.
	late := dialFrom(t, addr, "127.0.0.1")
	if !closedByServer(silent1, 2*time.Second) {
		t.Fatal("the oldest silent connection is still open at the limit")
	}
	if closedByServer(silent2, 50*time.Millisecond) {
		t.Fatal("the newer silent connection was closed")
	}
	if r := request(t, late, "/"); r.StatusCode != 200 {
		t.Fatalf("the connection that made room: %d", r.StatusCode)
	}
	// late is idle now: one more connection closes it, not the busy one.
	waitIdle(t, s, 1)
	last := dialFrom(t, addr, "127.0.0.1")
	if !closedByServer(late, 2*time.Second) {
		t.Fatal("the idle connection is still open at the limit")
	}

	// Every connection busy: a new one is refused.
	for _, c := range []net.Conn{silent2, last} {
		go io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n") //nolint:errcheck
	}
	time.Sleep(50 * time.Millisecond)
	refused := dialFrom(t, addr, "127.0.0.1")
	if !closedByServer(refused, 2*time.Second) {
		t.Fatal("a connection past the limit, every connection busy, was not refused")
	}
	if got := s.Connections(); got.Refused != 1 || got.Shed != 3 || got.Open != 3 {
		t.Fatalf("%+v, want 1 refused, 3 closed to make room, 3 open", got)
	}
	for _, c := range []net.Conn{busy, silent2, last} {
		if closedByServer(c, 50*time.Millisecond) {
			t.Fatal("a busy connection was closed")
		}
	}
}

// TestConnLimitPerAddress: an address at its limit makes room among its own connections,
// and is refused when they are all busy; another address is served meanwhile.
func TestConnLimitPerAddress(t *testing.T) {
	s, addr := slowServer(t, ServerConfig{MaxConns: 100, MaxConnsPerIP: 2})

	other := dialFrom(t, addr, "127.0.0.6") // another address's silent connection: never this one's room
	a1 := dialFrom(t, addr, "127.0.0.5")
	time.Sleep(20 * time.Millisecond)
	a2 := dialFrom(t, addr, "127.0.0.5")
	time.Sleep(20 * time.Millisecond)
	a3 := dialFrom(t, addr, "127.0.0.5")
	if !closedByServer(a1, 2*time.Second) {
		t.Fatal("the address's oldest silent connection is still open past its limit")
	}
	if closedByServer(other, 50*time.Millisecond) {
		t.Fatal("another address's connection was closed")
	}
	for _, c := range []net.Conn{a2, a3} {
		go io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n") //nolint:errcheck
	}
	time.Sleep(50 * time.Millisecond)
	a4 := dialFrom(t, addr, "127.0.0.5")
	if !closedByServer(a4, 2*time.Second) {
		t.Fatal("a connection past its address's limit, all of them busy, was not refused")
	}
	if r := request(t, other, "/"); r.StatusCode != 200 {
		t.Fatalf("the other address: %d", r.StatusCode)
	}
	if got := s.Connections(); got.Refused != 1 || got.Shed != 1 {
		t.Fatalf("%+v, want 1 refused and 1 closed to make room", got)
	}
}

// emfileListener fails its first n accepts with EMFILE, as a process out of descriptors does.
type emfileListener struct {
	net.Listener
	n atomic.Int64
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: &osSyscallError{syscall.EMFILE}}
	}
	return l.Listener.Accept()
}

// osSyscallError wraps an errno as os.SyscallError does.
type osSyscallError struct{ errno syscall.Errno }

func (e *osSyscallError) Error() string { return "accept4: " + e.errno.Error() }
func (e *osSyscallError) Unwrap() error { return e.errno }

// TestAcceptSurvivesRunningOutOfDescriptors: accept failing with EMFILE does not end Serve
// (fasthttp's would return, and the process exit); the server backs off, serves the next
// connection, and logs the trouble twice: when it starts and when it ends.
func TestAcceptSurvivesRunningOutOfDescriptors(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s := NewServer(func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }, ServerConfig{}, zap.New(core))
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &emfileListener{Listener: inner}
	ln.n.Store(5)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	c := dialFrom(t, inner.Addr().String(), "127.0.0.1")
	if r := request(t, c, "/"); r.StatusCode != 200 {
		t.Fatalf("after 5 failed accepts: %d", r.StatusCode)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned after failed accepts: %v", err)
	default:
	}
	if got := s.Connections().AcceptErrors; got != 5 {
		t.Errorf("%d accept errors counted, want 5", got)
	}
	var lines []string
	for _, e := range logs.All() {
		lines = append(lines, e.Message)
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "failing") || !strings.Contains(lines[1], "recovered") {
		t.Errorf("log: %q, want one line when accepting fails and one when it works again", lines)
	}
	if err := s.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
}
