package main

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestServeSurvivesConnectionFloods runs serve with 1,024 file descriptors (a unit's
// LimitNOFILE, lowered) and floods it without credentials: 1,100 connections that send
// nothing from one address, then 1,100 idle keep-alive connections (each after one GET
// /healthz) from eight others, more than the process has descriptors for. A probe from an
// address of its own gets /healthz answered throughout and after, and the process never
// exits (docs/operations.md, "Connections and file descriptors"): with the default limits,
// which close idle and silent connections to make room (counted on /metrics), and without
// them, when accept itself runs out of descriptors and backs off.
func TestServeSurvivesConnectionFloods(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"default limits", nil},
		{"no limits: accept runs out of descriptors", []string{"--max-conns", "-1", "--max-conns-per-ip", "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := freeAddr(t)
			s := startServeLimited(t, 1024, "", []string{"DATABASE_URL=" + pgtest.URL(t)}, addr, tc.flags...)
			p := startProbe(t, addr, "127.0.0.2")

			silent := floodConnections(t, addr, []string{"127.0.0.1"}, 1100, false)
			p.expectAnswers(t, "while 1,100 silent connections are open", s)
			idle := floodConnections(t, addr, []string{"127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7",
				"127.0.0.8", "127.0.0.9", "127.0.0.10"}, 1100, true)
			p.expectAnswers(t, "while 1,100 idle keep-alive connections are open", s)
			t.Logf("flood: %d silent and %d keep-alive connections established", len(silent), len(idle))
			for _, c := range append(silent, idle...) {
				c.Close()
			}
			p.expectAnswers(t, "after the flood", s)
			p.stop()
			if ok, why := s.alive(); !ok {
				t.Fatal(why)
			}
			_, metrics := get(t, "http://"+addr+"/metrics")
			limit := metricValue(t, metrics, "switchboard_http_connections_limit")
			shed := metricValue(t, metrics, "switchboard_http_connections_shed_total")
			acceptErrors := metricValue(t, metrics, "switchboard_http_accept_errors_total")
			t.Logf("connection limit %v; %v idle or silent connections closed to make room; %v failed accepts",
				limit, shed, acceptErrors)
			switch {
			case tc.flags != nil && (limit != 0 || acceptErrors == 0):
				t.Errorf("without limits: limit %v, %v failed accepts; want 0 and some", limit, acceptErrors)
			case tc.flags == nil && (limit <= 0 || limit >= 1024):
				t.Errorf("switchboard_http_connections_limit %v under 1,024 descriptors", limit)
			case tc.flags == nil && shed < 2200-limit:
				t.Errorf("switchboard_http_connections_shed_total %v after 2,200 connections, want at least %v", shed, 2200-limit)
			}
		})
	}
}

// metricValue is the value of the unlabelled sample name in a /metrics body.
func metricValue(t *testing.T, body, name string) float64 {
	t.Helper()
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// probe requests /healthz on a fresh connection from its own address every 50 ms.
type probe struct {
	mu       sync.Mutex
	ok, fail int
	firstErr string
	done     chan struct{}
	wg       sync.WaitGroup
}

func startProbe(t *testing.T, addr, from string) *probe {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 3 * time.Second}
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	p := &probe{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			r, err := c.Get("http://" + addr + "/healthz")
			p.mu.Lock()
			switch {
			case err != nil:
				p.fail++
				if p.firstErr == "" {
					p.firstErr = err.Error()
				}
			case r.StatusCode != 200:
				p.fail++
				if p.firstErr == "" {
					p.firstErr = r.Status
				}
			default:
				p.ok++
			}
			p.mu.Unlock()
			if r != nil {
				r.Body.Close()
			}
			select {
			case <-p.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// expectAnswers waits for three more probes and fails t if any probe so far failed.
func (p *probe) expectAnswers(t *testing.T, when string, s *served) {
	t.Helper()
	p.mu.Lock()
	want := p.ok + p.fail + 3
	p.mu.Unlock()
	deadline := time.Now().Add(15 * time.Second)
	for {
		p.mu.Lock()
		n, fail, first := p.ok+p.fail, p.fail, p.firstErr
		p.mu.Unlock()
		if fail > 0 {
			_, why := s.alive()
			t.Fatalf("%s: %d of %d probes failed, the first: %s %s", when, fail, n, first, why)
		}
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: probes hang (%d done)", when, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *probe) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
}

// floodConnections opens n connections to addr from the given addresses in turn and
// returns those that were established; with keepAlive each sends one GET /healthz and
// reads its answer first. Connections the server refuses or closes are not errors.
func floodConnections(t *testing.T, addr string, from []string, n int, keepAlive bool) []net.Conn {
	t.Helper()
	var (
		mu    sync.Mutex
		conns []net.Conn
		next  atomic.Int64
		wg    sync.WaitGroup
	)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from[i%len(from)])}, Timeout: 2 * time.Second}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					continue
				}
				if keepAlive {
					c.SetDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck
					if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: flood\r\n\r\n")); err != nil {
						c.Close()
						continue
					}
					r, err := http.ReadResponse(bufio.NewReader(c), nil)
					if err != nil {
						c.Close()
						continue
					}
					r.Body.Close()
					c.SetDeadline(time.Time{}) //nolint:errcheck
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	return conns
}
