package httpio

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/retry"
)

// Every client connection is a file descriptor. A process out of descriptors cannot accept
// (accept4 fails with EMFILE), nor open a database connection or a file, and fasthttp's
// Serve returns on the first accept error it does not know as a timeout: the process would
// exit. So the server keeps the connections it holds below the descriptor limit, and treats
// an accept error that can pass as a reason to wait, not to stop:
//
//   - At most MaxConns connections are open at once, and at most MaxConnsPerIP from one
//     client address (an IPv6 /64). fasthttp's own Concurrency and MaxConnsPerIP are not
//     used: the latter counts IPv4 addresses only, both write their refusal from the accept
//     loop, and neither makes room by closing idle connections.
//   - A connection past a limit first makes room: the oldest connection waiting for its next
//     request (idle keep-alive) is closed, else the oldest that has sent nothing yet, of the
//     same address when the address is at its limit, else of all. Only when every
//     connection is in the middle of a request is the new one refused (closed at once). A
//     flood of connections that send nothing, or of idle keep-alive ones, thus recycles its
//     own connections, while a client that sends a request is served.
//   - An accept error that can pass (EMFILE, ENFILE, ENOBUFS, ENOMEM, a connection aborted
//     before it was accepted, ...) closes the oldest idle or silent connection, to free a
//     descriptor, and the listener accepts again a millisecond later; with none to close,
//     after a backoff of 5 ms doubling up to 1 s, as net/http does. It is logged once when
//     it starts and once when accepting works again (retry.Outage).

// acceptBackoff is the wait between failed accepts when no connection could be closed to
// free a descriptor; shedWait the wait after one was (its descriptor is released once the
// goroutine reading it has woken).
var acceptBackoff = retry.Backoff{Min: 5 * time.Millisecond, Max: time.Second}

const shedWait = time.Millisecond

// DescriptorLimit is the process's limit on open file descriptors (the soft RLIMIT_NOFILE,
// which the Go runtime raises to the hard one at start), 0 when unknown.
func DescriptorLimit() int {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil || l.Cur > 1<<30 {
		return 0
	}
	return int(l.Cur)
}

// connState is where a tracked connection is in its life.
type connState uint8

const (
	connSilent connState = iota // accepted, nothing read yet
	connBusy                    // reading, handling or answering a request
	connIdle                    // answered, waiting for the next request
	connGone                    // closed, or chosen to be closed to make room
)

// connLimiter counts the open connections of one server, in total and per client address,
// and knows the idle and silent ones in the order they became so, to close the oldest
// first.
type connLimiter struct {
	max, perAddr int // 0: no limit

	mu    sync.Mutex
	open  int
	addrs map[[16]byte]*addrConns
	all   queues // every address's idle and silent connections

	refused, shed, acceptErrors atomic.Int64
	pressure                    *incidentLog
	accept                      *retry.Outage // the accept loop's errors (one goroutine)
}

// addrConns are the open connections of one client address.
type addrConns struct {
	n int
	queues
}

// queues are the idle and the silent connections of an address or of all, each oldest
// first: those that can be closed to make room.
type queues struct {
	idle, silent connList
}

// oldest is the connection to close first: the oldest idle one, else the oldest silent one.
func (q *queues) oldest() *trackedConn {
	if q.idle.head != nil {
		return q.idle.head
	}
	return q.silent.head
}

// Links: a tracked connection is in two lists at once, the limiter's and its address's.
const (
	allLink = iota
	addrLink
)

// connList is a doubly linked list of tracked connections through their links[i].
type connList struct {
	head, tail *trackedConn
}

func (l *connList) push(c *trackedConn, i int) {
	c.links[i].prev, c.links[i].next = l.tail, nil
	if l.tail != nil {
		l.tail.links[i].next = c
	} else {
		l.head = c
	}
	l.tail = c
}

func (l *connList) remove(c *trackedConn, i int) {
	if p := c.links[i].prev; p != nil {
		p.links[i].next = c.links[i].next
	} else {
		l.head = c.links[i].next
	}
	if n := c.links[i].next; n != nil {
		n.links[i].prev = c.links[i].prev
	} else {
		l.tail = c.links[i].prev
	}
	c.links[i].prev, c.links[i].next = nil, nil
}

func newConnLimiter(max, perAddr int, log *zap.Logger, every time.Duration) *connLimiter {
	l := &connLimiter{max: max, perAddr: perAddr, addrs: map[[16]byte]*addrConns{}}
	l.pressure = newIncidentLog(log, every, "connection limit reached: closing idle connections, refusing new ones when none is idle",
		"connection limit still reached", "connection limit no longer reached")
	l.pressure.extra = func() []zap.Field {
		l.mu.Lock()
		open := l.open
		l.mu.Unlock()
		return []zap.Field{zap.Int("open", open), zap.Int64("refused_total", l.refused.Load()),
			zap.Int64("shed_total", l.shed.Load())}
	}
	l.accept = retry.NewOutage(log, "accept connections", acceptBackoff, nil)
	return l
}

// admit registers a new connection, making room first when a limit is reached. It returns
// nil when the connection must be refused.
func (l *connLimiter) admit(c net.Conn) *trackedConn {
	key := connKey(c)
	var victims [2]*trackedConn
	l.mu.Lock()
	if a := l.addrs[key]; a != nil && l.perAddr > 0 && a.n >= l.perAddr {
		if victims[0] = l.makeRoom(&a.queues); victims[0] == nil {
			l.mu.Unlock()
			l.refuse(c, "per address")
			return nil
		}
	}
	if l.max > 0 && l.open >= l.max {
		if victims[1] = l.makeRoom(&l.all); victims[1] == nil {
			l.mu.Unlock()
			l.refuse(c, "total")
			return nil
		}
	}
	a := l.addrs[key] // a victim may have been the address's last connection
	if a == nil {
		a = &addrConns{}
		l.addrs[key] = a
	}
	t := &trackedConn{Conn: c, l: l, addr: a, key: key}
	t.listed.Store(true)
	l.open++
	a.n++
	l.all.silent.push(t, allLink)
	a.silent.push(t, addrLink)
	l.mu.Unlock()
	for _, v := range victims {
		if v != nil {
			l.shed.Add(1)
			v.Conn.Close()
			l.pressure.occurred(func() []zap.Field {
				return []zap.Field{zap.Int("limit", l.max), zap.Int("per_address_limit", l.perAddr)}
			})
		}
	}
	return t
}

// refuse closes a connection no limit had room for.
func (l *connLimiter) refuse(c net.Conn, which string) {
	l.refused.Add(1)
	c.Close()
	l.pressure.occurred(func() []zap.Field {
		return []zap.Field{zap.String("refused_by", which), zap.Int("limit", l.max), zap.Int("per_address_limit", l.perAddr)}
	})
}

// makeRoom releases the connection of q to close first and returns it, or nil when q has
// none (every connection busy). l.mu is held; the caller closes it after unlocking.
func (l *connLimiter) makeRoom(q *queues) *trackedConn {
	v := q.oldest()
	if v != nil {
		l.releaseLocked(v)
	}
	return v
}

// shedOne closes the oldest idle or silent connection, if any (a descriptor is needed). It
// reports whether it closed one.
func (l *connLimiter) shedOne() bool {
	l.mu.Lock()
	v := l.makeRoom(&l.all)
	l.mu.Unlock()
	if v == nil {
		return false
	}
	l.shed.Add(1)
	v.Conn.Close()
	return true
}

// unlist takes c out of the idle or silent lists; l.mu is held.
func (l *connLimiter) unlist(c *trackedConn) {
	switch c.state {
	case connIdle:
		l.all.idle.remove(c, allLink)
		c.addr.idle.remove(c, addrLink)
	case connSilent:
		l.all.silent.remove(c, allLink)
		c.addr.silent.remove(c, addrLink)
	}
	c.listed.Store(false)
}

// releaseLocked forgets c: it no longer counts against any limit. l.mu is held.
func (l *connLimiter) releaseLocked(c *trackedConn) {
	if c.state == connGone {
		return
	}
	l.unlist(c)
	c.state = connGone
	l.open--
	if c.addr.n--; c.addr.n == 0 {
		delete(l.addrs, c.key)
	}
}

// busy marks c as working on a request: it is no longer a candidate to be closed.
func (l *connLimiter) busy(c *trackedConn) {
	l.mu.Lock()
	if c.state == connSilent || c.state == connIdle {
		l.unlist(c)
		c.state = connBusy
	}
	l.mu.Unlock()
}

// idled marks c as waiting for its next request.
func (l *connLimiter) idled(c *trackedConn) {
	l.mu.Lock()
	if c.state == connBusy {
		c.state = connIdle
		l.all.idle.push(c, allLink)
		c.addr.idle.push(c, addrLink)
		c.listed.Store(true)
	}
	l.mu.Unlock()
}

// connState is the fasthttp.Server's ConnState hook: it learns when a connection has
// answered and waits for its next request.
func (l *connLimiter) connState(c net.Conn, s fasthttp.ConnState) {
	if t, ok := c.(*trackedConn); ok && s == fasthttp.StateIdle {
		l.idled(t)
	}
}

// openConns is the number of open connections.
func (l *connLimiter) openConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// connKey is the client address of c as the limits count it (IPv6 per /64).
func connKey(c net.Conn) [16]byte {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return clientKey(a.IP)
	}
	return [16]byte{}
}

// trackedConn is a connection the limiter counts until it is closed.
type trackedConn struct {
	net.Conn
	l     *connLimiter
	addr  *addrConns
	key   [16]byte
	links [2]struct{ prev, next *trackedConn }
	state connState // guarded by l.mu
	// listed mirrors "state is silent or idle" so that Read can skip the lock on the
	// connection's usual path: reading a request it is already busy with.
	listed atomic.Bool
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.listed.Load() {
		c.l.busy(c)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// limitListener admits the connections of its listener within the limits and waits out
// accept errors that can pass.
type limitListener struct {
	net.Listener
	l    *connLimiter
	done chan struct{}
	once sync.Once
}

func (ln *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			if !transientAccept(err) {
				return nil, err
			}
			ln.l.acceptErrors.Add(1)
			d := ln.l.accept.Failed(err)
			if ln.l.shedOne() {
				d = shedWait // a descriptor is being freed: accept again at once
			}
			select {
			case <-time.After(d):
			case <-ln.done:
				return nil, net.ErrClosed
			}
			continue
		}
		ln.l.accept.Succeeded()
		if t := ln.l.admit(c); t != nil {
			return t, nil
		}
	}
}

func (ln *limitListener) Close() error {
	ln.once.Do(func() { close(ln.done) })
	return ln.Listener.Close()
}

// transientAccept reports whether an accept error can pass: the process or the system out
// of descriptors or memory, or a connection that failed before it was accepted (accept(2)
// passes pending network errors on: ECONNABORTED, EPROTO, ENETDOWN, ...). A closed listener's
// error is not.
func transientAccept(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	switch errno {
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET,
		syscall.EAGAIN, syscall.EINTR, syscall.EPERM, syscall.EPROTO, syscall.ENETDOWN, syscall.ENOPROTOOPT,
		syscall.EHOSTDOWN, syscall.ENONET, syscall.EHOSTUNREACH, syscall.EOPNOTSUPP, syscall.ENETUNREACH, syscall.ETIMEDOUT:
		return true
	}
	return false
}
