package httpio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"

	"go.uber.org/zap"
)

// chunkConn serves data in reads of at most chunk bytes.
type chunkConn struct {
	net.Conn
	r     *bytes.Reader
	chunk int
}

func (c *chunkConn) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.chunk)]) }
func (c *chunkConn) Close() error               { return nil }
func (c *chunkConn) RemoteAddr() net.Addr       { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1} }

// sniff reads data through a sniffConn in reads of chunk bytes and returns what it passed
// on and how it ended.
func sniff(data []byte, chunk int) ([]byte, error) {
	s := &Server{log: zap.NewNop(), logLimit: NewThrottle(10, 50)}
	c := &sniffConn{Conn: &chunkConn{r: bytes.NewReader(data), chunk: chunk}, s: s, inspecting: true}
	var out []byte
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, err
		}
	}
}

// FuzzSniffConn: the first-request inspection passes bytes through unchanged, stops only on
// a TLS record or a bare LF, and decides the same whatever the read sizes.
func FuzzSniffConn(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), uint8(3))
	f.Add([]byte("GET / HTTP/1.1\nHost: a\n\n"), uint8(1))
	f.Add([]byte("\x16\x03\x01\x00"), uint8(2))
	f.Add([]byte("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n\n\n"), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		whole, errWhole := sniff(data, 64)
		parts, errParts := sniff(data, int(chunk%16)+1)
		if errors.Is(errWhole, errBareLF) != errors.Is(errParts, errBareLF) {
			t.Fatalf("bare LF decided differently by read size: %v / %v", errWhole, errParts)
		}
		for _, r := range []struct {
			out []byte
			err error
		}{{whole, errWhole}, {parts, errParts}} {
			if !bytes.HasPrefix(data, r.out) {
				t.Fatalf("passed on %q, not a prefix of %q", r.out, data)
			}
			switch {
			case len(data) > 0 && data[0] == 0x16:
				if len(r.out) != 0 || r.err != io.EOF {
					t.Fatalf("TLS record passed on %q, %v", r.out, r.err)
				}
			case r.err == io.EOF && len(r.out) != len(data):
				t.Fatalf("ended cleanly after %d of %d bytes", len(r.out), len(data))
			}
		}
	})
}
