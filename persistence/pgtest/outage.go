package pgtest

import (
	"encoding/binary"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// Link is a TCP proxy between a test and its database that the test can cut, to simulate
// a database outage (a network partition or a server down) without stopping the cluster
// other tests share. It also counts the statements its clients run, for tests of how many
// round trips a request costs.
type Link struct {
	ln         net.Listener
	upstream   string
	statements atomic.Int64

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

// NewLink starts a proxy to the server of dbURL (a postgres:// URL) and returns it with
// the URL that reaches the same database through it. It stops when the test ends.
func NewLink(t testing.TB, dbURL string) (*Link, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		t.Fatalf("pgtest: link needs a postgres:// URL with a host: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Link{ln: ln, upstream: u.Host, conns: map[net.Conn]struct{}{}}
	u.Host = ln.Addr().String()
	go l.accept()
	t.Cleanup(func() {
		ln.Close()
		l.Cut()
	})
	return l, u.String()
}

// Cut closes every connection through the link and refuses new ones until Restore.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for c := range l.conns {
		c.Close()
	}
	clear(l.conns)
}

// Restore lets connections through again.
func (l *Link) Restore() {
	l.mu.Lock()
	l.down = false
	l.mu.Unlock()
}

func (l *Link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.pipe(c)
	}
}

func (l *Link) pipe(c net.Conn) {
	l.mu.Lock()
	down := l.down
	l.mu.Unlock()
	if down {
		c.Close()
		return
	}
	up, err := net.Dial("tcp", l.upstream)
	if err != nil {
		c.Close()
		return
	}
	l.mu.Lock()
	if l.down {
		l.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	l.conns[c], l.conns[up] = struct{}{}, struct{}{}
	l.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(&statementMeter{w: up, n: &l.statements}, c); done <- struct{}{} }() //nolint:errcheck
	go func() { io.Copy(c, up); done <- struct{}{} }()                                       //nolint:errcheck
	<-done
	c.Close()
	up.Close()
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, up)
	l.mu.Unlock()
}

// Statements is how many statements the link's clients have run so far: simple queries and
// executions of prepared ones (the protocol's Query and Bind messages).
func (l *Link) Statements() int64 { return l.statements.Load() }

// statementMeter passes a client's bytes on and counts the Query and Bind messages among
// them. The stream opens with untyped messages (the startup message, or an SSL request
// before it: the test clusters refuse SSL), then carries typed ones.
type statementMeter struct {
	w     io.Writer
	n     *atomic.Int64
	typed bool
	hdr   [8]byte
	have  int
	skip  int
}

func (m *statementMeter) Write(p []byte) (int, error) {
	n, err := m.w.Write(p)
	for p := p[:n]; len(p) > 0; {
		if m.skip > 0 {
			k := min(m.skip, len(p))
			m.skip, p = m.skip-k, p[k:]
			continue
		}
		size := 8 // untyped: length, then the request code
		if m.typed {
			size = 5 // type, then length
		}
		k := copy(m.hdr[m.have:size], p)
		m.have, p = m.have+k, p[k:]
		if m.have < size {
			continue
		}
		m.have = 0
		if m.typed {
			if t := m.hdr[0]; t == 'Q' || t == 'B' {
				m.n.Add(1)
			}
			m.skip = int(binary.BigEndian.Uint32(m.hdr[1:5])) - 4
			continue
		}
		m.skip = int(binary.BigEndian.Uint32(m.hdr[0:4])) - 8
		m.typed = binary.BigEndian.Uint32(m.hdr[4:8]) == 3<<16 // protocol 3.0: the startup message
	}
	return n, err
}
