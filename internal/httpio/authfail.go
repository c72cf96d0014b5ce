package httpio

import (
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
)

// AuthFailures limits failed authentications per client address, so that guessing tokens
// costs the guesser a 429 after a few tries instead of costing the server a database
// look-up per guess. Only failures are counted: a request whose credentials are right is
// never slowed by it (callers consult it only when a cheap check of the credentials has
// not already succeeded).
//
// The table has a fixed size (AuthFailureSlots entries, about 200 KB): an address not in
// it starts with a full burst, and when a set is full the entry with the least debt is
// replaced. IPv6 addresses are counted per /64, the block one subscriber usually holds.
// Limits are per process.
type AuthFailures struct {
	interval, window int64 // nanoseconds per failure; interval × burst
	locks            [64]sync.Mutex
	slots            [AuthFailureSlots]failSlot
}

// AuthFailureSlots is the number of client addresses AuthFailures remembers at once.
const AuthFailureSlots = 8192

// failWays is the associativity of the table: an address lives in one set of failWays slots.
const failWays = 4

type failSlot struct {
	addr [16]byte
	tat  int64 // theoretical arrival time of the next failure, unix nanoseconds; 0: empty
}

// NewAuthFailures allows rate failed authentications a second per client address, with
// bursts up to burst; rate <= 0 returns nil, which limits nothing.
func NewAuthFailures(rate float64, burst int) *AuthFailures {
	t := NewThrottle(rate, burst)
	if t == nil {
		return nil
	}
	return &AuthFailures{interval: t.interval, window: t.window}
}

// Blocked reports whether the client of ctx has used up its failures, and if so how long
// until it may fail again. It changes nothing.
func (f *AuthFailures) Blocked(ctx *fasthttp.RequestCtx, now time.Time) (bool, time.Duration) {
	if f == nil {
		return false, 0
	}
	addr := clientKey(ctx.RemoteIP())
	set, lock := f.set(addr)
	n := now.UnixNano()
	lock.Lock()
	defer lock.Unlock()
	for i := range set {
		if s := &set[i]; s.tat != 0 && s.addr == addr {
			if ahead := max(s.tat, n) + f.interval - n; ahead > f.window {
				return true, time.Duration(ahead - f.window)
			}
			return false, 0
		}
	}
	return false, 0
}

// Refuse returns the 429 fault, with Retry-After set on the response, when the client of
// ctx has used up its failed authentications, and nil otherwise.
func (f *AuthFailures) Refuse(ctx *fasthttp.RequestCtx, now time.Time) error {
	if blocked, wait := f.Blocked(ctx, now); blocked {
		SetRetryAfter(ctx, wait)
		return fault.RateLimited()
	}
	return nil
}

// Failed answers a failed authentication: the 429 of Refuse when the client has already
// used up its failures, else err, the failure counted.
func (f *AuthFailures) Failed(ctx *fasthttp.RequestCtx, now time.Time, err error) error {
	if refused := f.Refuse(ctx, now); refused != nil {
		return refused
	}
	f.Fail(ctx, now)
	return err
}

// Fail records one failed authentication of the client of ctx.
func (f *AuthFailures) Fail(ctx *fasthttp.RequestCtx, now time.Time) {
	if f == nil {
		return
	}
	addr := clientKey(ctx.RemoteIP())
	set, lock := f.set(addr)
	n := now.UnixNano()
	lock.Lock()
	defer lock.Unlock()
	victim := &set[0]
	for i := range set {
		s := &set[i]
		if s.tat != 0 && s.addr == addr {
			victim = s
			break
		}
		if s.tat < victim.tat { // empty (0) or least in debt
			victim = s
		}
	}
	if victim.addr != addr {
		victim.addr, victim.tat = addr, 0
	}
	victim.tat = max(victim.tat, n) + f.interval
}

// set returns the slots an address may occupy and the lock guarding them.
func (f *AuthFailures) set(addr [16]byte) ([]failSlot, *sync.Mutex) {
	h := binary.LittleEndian.Uint64(addr[:8])*0x9E3779B97F4A7C15 ^ binary.LittleEndian.Uint64(addr[8:])*0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	i := int(h % (AuthFailureSlots / failWays))
	return f.slots[i*failWays : (i+1)*failWays], &f.locks[i%len(f.locks)]
}

// clientKey is the address a client is counted under: an IPv4 address in its 16-byte form,
// an IPv6 address reduced to its /64.
func clientKey(ip net.IP) [16]byte {
	var k [16]byte
	if v4 := ip.To4(); v4 != nil {
		k[10], k[11] = 0xff, 0xff
		copy(k[12:], v4)
		return k
	}
	copy(k[:8], ip.To16())
	return k
}
