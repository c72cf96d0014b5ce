package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Link is a TCP proxy between a test and its database that the test can cut, to simulate
// a database outage (a network partition or a server down) without stopping the cluster
// other tests share.
type Link struct {
	ln       net.Listener
	upstream string

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
	go func() { io.Copy(up, c); done <- struct{}{} }() //nolint:errcheck
	go func() { io.Copy(c, up); done <- struct{}{} }() //nolint:errcheck
	<-done
	c.Close()
	up.Close()
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, up)
	l.mu.Unlock()
}
