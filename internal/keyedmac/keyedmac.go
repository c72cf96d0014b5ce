// Package keyedmac computes HMACs under long-lived secrets (buyers' api_secrets, partners'
// secrets) without keying a new hash for every message. A callback verifies one signature
// and signs two URLs, an entry signs its supplier link, thousands of times a second; and
// crypto/hmac.New allocates the keyed state (two hashes and their pads) each time, garbage
// that paces the collector. A Func keeps keyed states per secret and resets them after use.
package keyedmac

import (
	"crypto/hmac"
	"encoding/hex"
	"hash"
	"strings"
	"sync"
)

// MaxKeys bounds the secrets a Func keeps states for: past it (rotated secrets, a market
// larger than expected) it forgets them all and starts over.
const MaxKeys = 4096

// Func is an HMAC construction (its hash) with keyed states kept per secret. It is safe
// for concurrent use.
type Func struct {
	hash  func() hash.Hash
	mu    sync.RWMutex
	pools map[string]*sync.Pool // secret → *state keyed with it
}

// state is one keyed HMAC and the buffers a computation uses.
type state struct {
	mac      hash.Hash
	msg, sum []byte
}

// New returns the HMAC of h (sha1.New, sha256.New).
func New(h func() hash.Hash) *Func { return &Func{hash: h, pools: map[string]*sync.Pool{}} }

// Sum appends to dst the HMAC, keyed with secret, of the concatenation of parts.
func (f *Func) Sum(dst []byte, secret string, parts ...string) []byte {
	p := f.pool(secret)
	st := p.Get().(*state)
	st.msg = st.msg[:0]
	for _, s := range parts {
		st.msg = append(st.msg, s...)
	}
	st.mac.Write(st.msg)
	st.sum = st.mac.Sum(st.sum[:0])
	st.mac.Reset()
	dst = append(dst, st.sum...)
	p.Put(st)
	return dst
}

// AppendHex appends to dst the lower-case hex HMAC, keyed with secret, of the
// concatenation of parts.
func (f *Func) AppendHex(dst []byte, secret string, parts ...string) []byte {
	var sum [64]byte // any hash up to 512 bits, on the stack
	return hex.AppendEncode(dst, f.Sum(sum[:0], secret, parts...))
}

// Hex is the lower-case hex HMAC, keyed with secret, of the concatenation of parts.
func (f *Func) Hex(secret string, parts ...string) string {
	var b [2 * 64]byte // the hex of any hash up to 512 bits, on the stack
	return string(f.AppendHex(b[:0], secret, parts...))
}

// EqualHex reports, in constant time, whether sig is the lower-case hex HMAC, keyed with
// secret, of the concatenation of parts.
func (f *Func) EqualHex(sig string, secret string, parts ...string) bool {
	var b [2 * 64]byte
	want := f.AppendHex(b[:0], secret, parts...)
	if len(sig) != len(want) {
		return false // the length is no secret: every HMAC of this hash has it
	}
	// subtle.ConstantTimeCompare's loop, on a string (its []byte would be allocated).
	var v byte
	for i := range want {
		v |= want[i] ^ sig[i]
	}
	return v == 0
}

// pool returns the keyed states of secret.
func (f *Func) pool(secret string) *sync.Pool {
	f.mu.RLock()
	p := f.pools[secret]
	f.mu.RUnlock()
	if p != nil {
		return p
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if p = f.pools[secret]; p == nil {
		if len(f.pools) >= MaxKeys {
			clear(f.pools)
		}
		key := []byte(secret)
		p = &sync.Pool{New: func() any { return &state{mac: hmac.New(f.hash, key)} }}
		f.pools[strings.Clone(secret)] = p
	}
	return p
}
