package httpio

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
)

// ServerConfig bounds what one client may cost the server before its request reaches a
// handler (docs/operations.md).
type ServerConfig struct {
	// HeaderTimeout is the time a client has to send a request's header, from its first
	// byte (from the connection's opening for the first request). Default 5 s.
	HeaderTimeout time.Duration
	// BodyTimeout is the most time a client has to send a request's body, once the header is
	// in. Default 30 s.
	BodyTimeout time.Duration
	// BodyMinRate is the slowest body upload expected, in bytes a second: a body of
	// Content-Length n gets HeaderTimeout + n/BodyMinRate, at most BodyTimeout, so that a
	// Content-Length larger than the body sent is given up soon. Default 64 KiB/s.
	BodyMinRate int
	// WriteTimeout bounds writing one response (default 60 s); IdleTimeout bounds the wait
	// for the next request on a kept-alive connection (default 2 min).
	WriteTimeout, IdleTimeout time.Duration
	// MaxBodySize is the largest request body read (default 8 MiB); larger ones get 413.
	MaxBodySize int
	// AccessLogSample is the fraction of requests, 0 to 1, that get an access log line
	// (accesslog.go); responses of status 500 and above always get one, except refusals
	// because a dependency is unavailable (MarkUnavailable), which are counted as an
	// incident instead. 0: only those.
	AccessLogSample float64
	// MaxConns bounds the connections open at once, MaxConnsPerIP those of one client
	// address (an IPv6 /64); past a bound the oldest idle connection is closed to make room,
	// and only when none is idle is the new one refused (connlimit.go). Defaults: three
	// quarters of the process's file descriptor limit (the rest is for the database, outgoing
	// deliveries and files), and a quarter of MaxConns per address. Negative: no bound.
	// Behind a proxy every client has the proxy's address: switch MaxConnsPerIP off there.
	MaxConns, MaxConnsPerIP int
	// IncidentEvery is how often a lasting incident (requests refused because the database
	// is unavailable, the connection limit reached) is counted in the log between the lines
	// of its start and its end (default 10 s).
	IncidentEvery time.Duration
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = 5 * time.Second
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = 30 * time.Second
	}
	if c.BodyTimeout < c.HeaderTimeout {
		c.BodyTimeout = c.HeaderTimeout
	}
	if c.BodyMinRate <= 0 {
		c.BodyMinRate = 64 << 10
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = time.Minute
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.MaxBodySize <= 0 {
		c.MaxBodySize = 8 << 20
	}
	switch {
	case c.MaxConns == 0:
		c.MaxConns = DescriptorLimit() / 4 * 3
	case c.MaxConns < 0:
		c.MaxConns = 0
	}
	switch {
	case c.MaxConnsPerIP == 0:
		c.MaxConnsPerIP = c.MaxConns / 4
	case c.MaxConnsPerIP < 0:
		c.MaxConnsPerIP = 0
	}
	if c.IncidentEvery <= 0 {
		c.IncidentEvery = DefaultIncidentEvery
	}
	return c
}

// Server is the HTTP server of a Switchboard process: fasthttp with the timeouts of
// ServerConfig, bounded connections that survive running out of file descriptors
// (connlimit.go), a listener that closes TLS handshakes and bare-LF requests at once, an
// X-Request-Id on every response and a sampled access log (accesslog.go), and error logging
// through zap that never writes a request's content (its headers carry credentials): a
// malformed request is logged as method, path, client address and the kind of error, at
// most a few lines a second. Requests refused because the database is unavailable are
// logged as one incident (incident.go), not a line each.
type Server struct {
	fs          *fasthttp.Server
	cfg         ServerConfig
	log         *zap.Logger
	logLimit    *Throttle
	dropped     atomic.Int64 // log lines suppressed since the last one written
	malformed   atomic.Int64 // requests refused before the handler, ever
	ids         *requestIDs
	conns       *connLimiter
	unavailable *incidentLog // requests refused because a dependency is unavailable

	mu   sync.Mutex   // guards shut and ln
	shut bool         // Shutdown has begun: a later Serve serves nothing
	ln   net.Listener // the listener Serve was handed
}

// WriteBufferSize is the buffer a response is written through: an offers answer of 30 offers
// (about 12 KB with its header) leaves in one write(2) instead of two. Each costs a trip
// through the kernel's TCP stack, on loopback the receiver's too; the buffers are pooled,
// held only while a response is written.
const WriteBufferSize = 16 << 10

// NewServer returns a server that runs h.
func NewServer(h fasthttp.RequestHandler, cfg ServerConfig, log *zap.Logger) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, log: log, logLimit: NewThrottle(10, 50), ids: newRequestIDs(),
		conns: newConnLimiter(cfg.MaxConns, cfg.MaxConnsPerIP, log, cfg.IncidentEvery),
		unavailable: newIncidentLog(log, cfg.IncidentEvery, "dependency unavailable: refusing requests",
			"dependency still unavailable: requests refused", "dependency available again: no request refused for an interval")}
	s.fs = &fasthttp.Server{
		Handler:               s.accessLogged(h),
		Name:                  "switchboard",
		ReadTimeout:           cfg.HeaderTimeout, // the body gets its own deadline in headerReceived
		WriteTimeout:          cfg.WriteTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		MaxRequestBodySize:    cfg.MaxBodySize, // the JSON routes answer 413 above MaxBody
		WriteBufferSize:       WriteBufferSize,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
		SecureErrorLogMessage: true, // keeps request contents out of most error texts; reduceError does the rest
		HeaderReceived:        s.headerReceived,
		ErrorHandler:          s.errorHandler,
		Logger:                fasthttpLogger{s},
		ConnState:             s.conns.connState,
	}
	return s
}

// Serve answers requests on ln until Shutdown.
// A Serve after Shutdown (a stop during the start-up) closes ln and returns nil at once.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shut {
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()
	err := s.fs.Serve(&limitListener{Listener: sniffListener{Listener: ln, s: s}, l: s.conns, done: make(chan struct{})})
	s.mu.Lock()
	shut := s.shut
	s.mu.Unlock()
	if shut && errors.Is(err, net.ErrClosed) {
		return nil // closed by Shutdown before fasthttp held it
	}
	return err
}

// Shutdown stops accepting connections and waits for those in flight until ctx ends; an
// incident in progress is logged as ended.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shut = true
	ln := s.ln
	s.mu.Unlock()
	err := s.fs.ShutdownWithContext(ctx)
	if ln != nil {
		// A Serve that began as fasthttp closed its listeners would accept on forever.
		_ = ln.Close()
	}
	s.unavailable.close()
	s.conns.pressure.close()
	return err
}

// ConnStats are the counts of a server's connections.
type ConnStats struct {
	Open                int   // open now
	Limit, PerAddrLimit int   // ServerConfig.MaxConns, MaxConnsPerIP; 0: none
	Refused, Shed       int64 // refused at a limit; closed while idle or silent to make room
	AcceptErrors        int64 // accepts that failed and were retried
}

// Connections returns the counts of the server's connections.
func (s *Server) Connections() ConnStats {
	l := s.conns
	return ConnStats{Open: l.openConns(), Limit: l.max, PerAddrLimit: l.perAddr, Refused: l.refused.Load(),
		Shed: l.shed.Load(), AcceptErrors: l.acceptErrors.Load()}
}

// Refused counts the requests refused before reaching the handler (malformed, too slow, a
// TLS handshake on the plain port).
func (s *Server) Refused() int64 { return s.malformed.Load() }

// headerReceived gives the body of a request its own read deadline once the header is in.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	n := h.ContentLength()
	if n == 0 {
		return fasthttp.RequestConfig{} // nothing to read: the header deadline stands
	}
	d := s.cfg.BodyTimeout
	if n > 0 {
		if t := s.cfg.HeaderTimeout + time.Duration(int64(n)*int64(time.Second)/int64(s.cfg.BodyMinRate)); t < d {
			d = t
		}
	}
	return fasthttp.RequestConfig{ReadTimeout: d}
}

// errorHandler answers a request fasthttp could not read, and logs it without its content.
func (s *Server) errorHandler(ctx *fasthttp.RequestCtx, err error) {
	s.malformed.Add(1)
	status, msg := fasthttp.StatusBadRequest, "malformed request"
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		status, msg = fasthttp.StatusRequestHeaderFieldsTooLarge, "request header too large"
	case errors.As(err, &ne) && ne.Timeout():
		status, msg = fasthttp.StatusRequestTimeout, "request not received in time"
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status, msg = fasthttp.StatusRequestEntityTooLarge, "request body too large"
	case errors.Is(err, errBareLF):
		msg = "malformed request: lines must end in CRLF"
	}
	if s.logAllowed() {
		s.log.Warn("malformed request", zap.String("method", printable(ctx.Method(), 16)),
			zap.String("path", printable(ctx.Path(), 128)), zap.Stringer("remote", ctx.RemoteAddr()),
			zap.Int("status", status), zap.String("error", reduceError(err)), s.droppedField())
	}
	WriteMessage(ctx, StyleMessage, status, msg)
	var buf [maxRequestID]byte
	s.setRequestID(ctx, buf[:])
}

// logAllowed reports whether a line about a refused request may be written now; the others
// are counted and reported with the next line written.
func (s *Server) logAllowed() bool {
	if ok, _ := s.logLimit.Allow(time.Now()); ok {
		return true
	}
	s.dropped.Add(1)
	return false
}

func (s *Server) droppedField() zap.Field {
	return zap.Int64("suppressed_since_last", s.dropped.Swap(0))
}

// reduceError is the part of a request-reading error that is safe to log: fasthttp's words
// for what went wrong, without the quoted request bytes, buffer dumps and addresses its
// texts may carry. Anything after a quote, "contents" or a control byte is dropped.
func reduceError(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ne) && ne.Timeout():
		return "read timeout"
	case errors.Is(err, errBareLF):
		return "bare LF line ending"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error when reading request headers: ")
	if i := strings.IndexAny(msg, "\"'`%\\"); i >= 0 {
		msg = msg[:i]
	}
	for _, cut := range []string{"contents", "buffer size", "read tcp", "write tcp"} {
		if i := strings.Index(msg, cut); i >= 0 {
			msg = msg[:i]
		}
	}
	return strings.TrimRight(printable([]byte(msg), 96), " :,")
}

// printable keeps at most max bytes of b, up to its first byte outside printable ASCII.
func printable(b []byte, max int) string {
	if len(b) > max {
		b = b[:max]
	}
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b = b[:i]
			break
		}
	}
	return string(b)
}

// fasthttpLogger receives fasthttp's own log lines. Their arguments may hold a request's
// content, so errors are reduced and other values kept only when they are addresses or
// numbers; the format string is fasthttp's constant text.
type fasthttpLogger struct{ s *Server }

func (l fasthttpLogger) Printf(format string, args ...any) {
	fields := make([]zap.Field, 0, len(args)+2)
	fields = append(fields, zap.String("format", format))
	var connErr error
	for _, a := range args {
		switch v := a.(type) {
		case error:
			connErr = v
			fields = append(fields, zap.String("error", reduceError(v)))
		case net.Addr:
			fields = append(fields, zap.Stringer("addr", v))
		case int, int64, uint64, uint32, int32, time.Duration:
			fields = append(fields, zap.Any("value", v))
		}
	}
	// fasthttp logs every connection that ended in an error; the request-reading ones were
	// logged by errorHandler already, the others are clients hanging up.
	if strings.HasPrefix(format, "error when serving connection") {
		if connErr != nil && l.s.log.Core().Enabled(zap.DebugLevel) && l.s.logAllowed() {
			l.s.log.Debug("connection ended with an error", append(fields, l.s.droppedField())...)
		}
		return
	}
	if l.s.logAllowed() {
		l.s.log.Warn("http server", append(fields, l.s.droppedField())...)
	}
}

// errBareLF is what a connection reports when its first request ends a line in a bare LF:
// fasthttp would wait for a CRLF until the header timeout; it is answered 400 at once.
var errBareLF = errors.New("bare LF line ending")

// sniffListener hands out connections that inspect the first request's header.
type sniffListener struct {
	net.Listener
	s *Server
}

func (l sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, s: l.s, inspecting: true}, nil
}

// sniffConn watches the bytes of a connection's first request header: a TLS record (0x16)
// as first byte is a client speaking TLS to the plain port, which is closed at once without
// an answer it could not read; a line ending in a bare LF makes the read fail with
// errBareLF, which errorHandler answers 400. After the first header it only forwards.
type sniffConn struct {
	net.Conn
	s          *Server
	inspecting bool
	seen       bool // a byte has been read
	prevCR     bool // the last byte read was '\r'
	lineLen    int  // bytes of the current line other than '\r'
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.inspecting || n == 0 {
		return n, err
	}
	if !c.seen {
		c.seen = true
		if p[0] == 0x16 {
			c.s.malformed.Add(1)
			if c.s.logAllowed() {
				c.s.log.Warn("TLS handshake on the plain HTTP port", zap.Stringer("remote", c.RemoteAddr()),
					c.s.droppedField())
			}
			c.Conn.Close()
			return 0, io.EOF
		}
	}
	for _, b := range p[:n] {
		switch b {
		case '\n':
			if !c.prevCR {
				return 0, errBareLF
			}
			if c.lineLen == 0 { // the empty line: end of the header
				c.inspecting = false
				return n, err
			}
			c.lineLen = 0
		case '\r':
		default:
			c.lineLen++
		}
		c.prevCR = b == '\r'
	}
	return n, err
}
