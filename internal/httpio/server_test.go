package httpio

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The credentials every malformed request below carries; none may reach the log.
const (
	secretToken  = "tok_SECRET_7f3a9c"
	secretPasswd = "pw_SECRET_41d2"
)

var secretBasic = base64.StdEncoding.EncodeToString([]byte("buyer@example.com:" + secretPasswd))

// startServer serves a handler answering 200 "ok" on a real listener and returns its
// address and the observed log.
func startServer(t *testing.T, cfg ServerConfig) (string, *observer.ObservedLogs, *Server) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	s := NewServer(func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }, cfg, zap.New(core))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, s, ln)
	return ln.Addr().String(), logs, s
}

// serveUntilCleanup serves s on ln until the test ends.
func serveUntilCleanup(t *testing.T, s *Server, ln net.Listener) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); s.Serve(ln) }() //nolint:errcheck
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx) //nolint:errcheck
		<-done
	})
}

// exchange writes raw on a fresh connection and reads until the server closes it. It
// returns what was read and how long the server took to close.
func exchange(t *testing.T, addr, raw string) (string, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	b, _ := io.ReadAll(c)
	return string(b), time.Since(start)
}

func TestMalformedRequestsAreClosedAtOnceAndLoggedWithoutCredentials(t *testing.T) {
	addr, logs, s := startServer(t, ServerConfig{HeaderTimeout: time.Second, BodyTimeout: 3 * time.Second})
	creds := "Authorization: Basic " + secretBasic + "\r\nX-Api-Token: " + secretToken + "\r\n"
	tls := "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + secretToken + "\n" + secretBasic
	cases := []struct {
		name   string
		raw    string
		status string // "" : closed without an answer
		within time.Duration
	}{
		{"content-length too large", "POST /api/v1/campaigns?auth=" + secretToken + " HTTP/1.1\r\nHost: a\r\n" + creds +
			"Content-Length: 99999999999999999999\r\n\r\n", "400", 500 * time.Millisecond},
		{"content-length list", "POST /supply_api/v4/campaigns HTTP/1.1\r\nHost: a\r\n" + creds + "Content-Length: 2, 2\r\n\r\nab", "400", 500 * time.Millisecond},
		{"negative content-length", "POST /x HTTP/1.1\r\nHost: a\r\n" + creds + "Content-Length: -1\r\n\r\n", "400", 500 * time.Millisecond},
		{"NUL in a header", "GET /x HTTP/1.1\r\nHost: a\r\n" + creds + "X-Note: a\x00b\r\n\r\n", "400", 500 * time.Millisecond},
		{"NUL in the token", "GET /x HTTP/1.1\r\nHost: a\r\nX-Api-Token: " + secretToken + "\x00\r\n\r\n", "400", 500 * time.Millisecond},
		{"token in the version", "GET /x HTTP/" + secretToken + "\r\n" + creds + "\r\n", "400", 500 * time.Millisecond},
		{"token as the method", secretToken + "\r\n" + creds + "\r\n", "400", 500 * time.Millisecond},
		{"bad chunk", "POST /x HTTP/1.1\r\nHost: a\r\n" + creds + "Transfer-Encoding: chunked\r\n\r\nzz" + secretToken + "\r\n\r\n", "400", 500 * time.Millisecond},
		{"bare LF", "GET /x HTTP/1.1\nHost: a\n" + strings.ReplaceAll(creds, "\r\n", "\n") + "\n", "400", 500 * time.Millisecond},
		{"bare LF in a header line", "GET /x HTTP/1.1\r\nHost: a\r\nX-Api-Token: " + secretToken + "\n\r\n", "400", 500 * time.Millisecond},
		{"TLS ClientHello", tls, "", 500 * time.Millisecond},
		{"header too large", "GET /x HTTP/1.1\r\nHost: a\r\n" + creds + "X-Pad: " + strings.Repeat("p", 8<<10) + "\r\n\r\n", "431", 500 * time.Millisecond},
		{"content-length beyond the body", "POST /x HTTP/1.1\r\nHost: a\r\n" + creds + "Content-Length: 100\r\n\r\n" + secretToken, "408", 2 * time.Second},
		{"header never finished", "GET /x HTTP/1.1\r\nHost: a\r\n" + creds, "408", 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, took := exchange(t, addr, tc.raw)
			if took > tc.within {
				t.Errorf("connection closed after %v, want within %v", took, tc.within)
			}
			switch {
			case tc.status == "" && got != "":
				t.Errorf("answered %q, want the connection closed without an answer", got)
			case tc.status != "" && !strings.HasPrefix(got, "HTTP/1.1 "+tc.status+" "):
				t.Errorf("answered %q, want %s", got, tc.status)
			case tc.status != "" && !strings.Contains(got, "Connection: close"):
				t.Errorf("answer %q does not announce the close", got)
			}
		})
	}
	if s.Refused() < int64(len(cases)) {
		t.Errorf("Refused() = %d, want at least %d", s.Refused(), len(cases))
	}
	entries := logs.All()
	if len(entries) < len(cases) {
		t.Errorf("%d log lines for %d refused requests", len(entries), len(cases))
	}
	decoded, _ := base64.StdEncoding.DecodeString(secretBasic)
	for _, e := range entries {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		for _, secret := range []string{secretToken, secretBasic, secretPasswd, string(decoded), "SECRET", "Authorization", "X-Api-Token"} {
			if strings.Contains(line, secret) {
				t.Errorf("log line carries %q: %s", secret, line)
			}
		}
	}
}

func TestMalformedRequestLogIsRateLimited(t *testing.T) {
	addr, logs, _ := startServer(t, ServerConfig{})
	const n = 200
	for range n {
		exchange(t, addr, "GET /x HTTP/1.1\r\nHost: a\r\nX-Note: a\x00b\r\n\r\n")
	}
	lines := logs.FilterMessage("malformed request").Len()
	if lines < 10 || lines > 80 {
		t.Errorf("%d log lines for %d malformed requests, want the burst of about 50", lines, n)
	}
}

func TestBodyGetsMoreTimeThanHeader(t *testing.T) {
	addr, _, _ := startServer(t, ServerConfig{HeaderTimeout: 300 * time.Millisecond, BodyTimeout: 5 * time.Second, BodyMinRate: 1000})
	t.Run("slow header", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /x HTTP/1.1\r\n") //nolint:errcheck
		time.Sleep(600 * time.Millisecond)
		io.WriteString(c, "Host: a\r\n\r\n")               //nolint:errcheck
		c.SetReadDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
		line, _ := bufio.NewReader(c).ReadString('\n')
		if !strings.HasPrefix(line, "HTTP/1.1 408 ") {
			t.Errorf("slow header answered %q, want 408", line)
		}
	})
	t.Run("slow large body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		body := strings.Repeat("b", 2000)                                                            // 0.3 s + 2000 B at 1000 B/s: 2.3 s to send it
		io.WriteString(c, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n"+body[:1000]) //nolint:errcheck
		time.Sleep(time.Second)
		io.WriteString(c, body[1000:])                     //nolint:errcheck
		c.SetReadDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
		line, _ := bufio.NewReader(c).ReadString('\n')
		if !strings.HasPrefix(line, "HTTP/1.1 200 ") {
			t.Errorf("body sent within its time answered %q, want 200", line)
		}
	})
	t.Run("well-formed keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for i := range 3 {
			io.WriteString(c, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc") //nolint:errcheck
			c.SetReadDeadline(time.Now().Add(5 * time.Second))                               //nolint:errcheck
			var resp fasthttp.Response
			if err := resp.Read(r); err != nil || resp.StatusCode() != 200 {
				t.Fatalf("request %d: %v %d", i, err, resp.StatusCode())
			}
		}
	})
}

func TestReduceError(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`error when reading request headers: unsupported http version "HTTP/tok": buffer size=25`, "unsupported http version"},
		{`error when reading request headers: invalid header value "a\x00b": buffer size=64`, "invalid header value"},
		{`error when reading request headers: cannot parse content-length: too long int: buffer size=106`, "cannot parse content-length: too long int"},
		{`cannot find whitespace in the first line of request "GET tok"`, "cannot find whitespace in the first line of request"},
		{"x: contents: Authorization: Basic abc", "x"},
	} {
		if got := reduceError(fmt.Errorf("%s", tc.in)); got != tc.want {
			t.Errorf("reduceError(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// writeCounter counts the writes on the connections it accepts.
type writeCounter struct {
	net.Listener
	writes atomic.Int64
}

func (l *writeCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l *writeCounter
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.l.writes.Add(1)
	return c.Conn.Write(p)
}

// An answer the size of an offers answer (30 offers, about 12 KB) leaves in one write: each
// write is a trip through the kernel's TCP stack.
func TestAnswerInOneWrite(t *testing.T) {
	body := strings.Repeat("x", 12_000)
	s := NewServer(func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString(body) }, ServerConfig{}, zap.NewNop())
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &writeCounter{Listener: inner}
	serveUntilCleanup(t, s, ln)
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	const requests = 5
	for i := range requests {
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		var resp fasthttp.Response
		if err := resp.Read(r); err != nil {
			t.Fatal(err)
		}
		if len(resp.Body()) != len(body) {
			t.Fatalf("request %d: body of %d bytes, want %d", i, len(resp.Body()), len(body))
		}
	}
	if got := ln.writes.Load(); got != requests {
		t.Errorf("%d responses of %d bytes took %d writes, want one each", requests, len(body), got)
	}
}

// A process told to stop before it serves (a signal during its start-up) must not serve:
// Serve after Shutdown returns at once, and a Shutdown racing a Serve that is starting
// still ends it.
func TestShutdownBeforeServeEndsServe(t *testing.T) {
	for _, race := range []bool{false, true} {
		s := NewServer(func(ctx *fasthttp.RequestCtx) {}, ServerConfig{}, zap.NewNop())
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		if race {
			go func() { done <- s.Serve(ln) }()
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("race %v: shutdown: %v", race, err)
		}
		cancel()
		if !race {
			go func() { done <- s.Serve(ln) }()
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("race %v: serve after shutdown: %v", race, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("race %v: Serve still running 5 s after Shutdown", race)
		}
	}
}
