// Package entrytoken signs and verifies the compact tokens the supply interface hands out in
// offer_entry_url, the profiler URL and support_url (docs/rules.md §6, §9).
//
// A token is base64url(payload) "." base64url(tag), both without padding, where tag is the
// 16-byte AES-CMAC of payload under a key derived from the service key (cmac.go says why
// that is sound; version 1 tokens, tagged with HMAC-SHA256, are no longer accepted). The
// payload is binary:
//
//	version   1 byte (4)
//	kind      1 byte (KindOffer, KindProfile, KindSupport)
//	key id    4 bytes, big endian (KeyID of the service key that signed it)
//	publisher uvarint
//	participant uvarint (0: not impaneled yet)
//	device    1 byte (supply device_type 1 mobile, 2 desktop, 3 tablet)
//	expires   uvarint (unix seconds)
//	nonce     8 bytes
//	device id 1 byte length + bytes (at most MaxString)
//	user id   1 byte length + bytes (at most MaxString; set on profile tokens, whose
//	          participant has no id yet)
//	campaign  uvarint (0 for profile and response-wide support tokens)
//
// The campaign comes last so that the offer tokens of one answer, which differ only in it,
// share the rest: an Offers signer encodes and MACs that shared start once, and each token
// then costs the one or two CMAC blocks its campaign id ends (the tokens of one answer share
// their nonce too; the campaign keeps each one distinct).
//
// A Key holds the current service key, which signs, and the previous ones still within the
// tokens' lifetime after a rotation (SetKeys), which verify until they are retired. A token
// naming any other key id makes the Key reload its keys first, a bounded number of times
// (SetLookup, lookup.go: a rotation another process has already heard of), and is then
// refused as a forged one is.
//
// Version 3 tokens have the campaign after the participant instead of last; version 2 ones
// are version 3 without the key id. Processes of earlier releases issued them, and during a
// rolling upgrade their links are still in flight, so they keep verifying for their normal
// lifetime (Expires): version 3 under the key it names, version 2 under any key of the ring
// that is not retired, tried in turn, each with a constant-time compare. Only version 4 is
// issued.
//
// Signing allocates only the returned string (AppendToken allocates nothing when dst has
// room); verification is constant-time in the tag.
package entrytoken

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/switchboard/switchboard/internal/fault"
)

// Kinds of token.
const (
	KindOffer   uint8 = 1 // offer_entry_url: enter CampaignID
	KindProfile uint8 = 2 // the hosted profiler of an unprofiled participant
	KindSupport uint8 = 3 // support_url of a session
)

const (
	version = 4
	// versionCampaignFirst is the format with the campaign after the participant
	// (accepted, never issued).
	versionCampaignFirst = 3
	// headerLen is the fixed start of a payload: version, kind, key id.
	headerLen = 2 + 4
	// versionNoKeyID is the format before the key id (accepted, never issued).
	versionNoKeyID = 2
	// headerLenNoKeyID is the fixed start of a version 2 payload: version, kind.
	headerLenNoKeyID = 2
	// TagSize is the size of a token's tag (an AES-CMAC).
	TagSize = 16
	// MaxString is the longest device or user identifier a token carries; Sign truncates
	// longer ones, so callers reject them first.
	MaxString = 255
	// TTL is how long a token is valid (docs/rules.md §6: 30 minutes).
	TTL = 30 * 60
	// MinKeySize is the shortest service key accepted.
	MinKeySize = 16
	// maxPayload bounds the binary payload: fixed part plus two strings.
	maxPayload = headerLen + 3*binary.MaxVarintLen64 + 1 + binary.MaxVarintLen64 + 8 + 2 + 2*MaxString
	// tagLen is the length of an encoded tag.
	tagLen = (TagSize*4 + 2) / 3
	// MaxTokenLen bounds the length of a token string.
	MaxTokenLen = (maxPayload*4+2)/3 + 1 + tagLen
)

// Claims is what a token names.
type Claims struct {
	Kind          uint8
	PublisherID   int64
	ParticipantID int64
	CampaignID    int64
	DeviceType    uint8
	Expires       int64 // unix seconds
	Nonce         uint64
	DeviceID      string
	UserID        string
}

// Key is the keyring of tokens: the current service key, which signs, and the previous
// ones that still verify until their retirement. It is safe for concurrent use; SetKeys
// replaces the ring atomically (a running process picks up a rotation with it).
type Key struct {
	ring atomic.Pointer[ring]
	look *lookup // how to learn a key the ring does not hold (SetLookup); nil: refuse
}

// ring is one immutable state of a Key.
type ring struct {
	cur  *secretKey
	keys []*secretKey // cur first, then the previous keys
}

// secretKey is one prepared service key: the AES-CMAC key of token tags, and for MAC the
// SHA-256 states after the HMAC pads, computed once.
type secretKey struct {
	id           uint32
	until        int64 // unix seconds from which its tokens are refused; 0: never (current)
	tok          *cmac
	inner, outer []byte // marshaled SHA-256 states after ipad and opad
	pool         sync.Pool
}

// Previous is a service key that no longer signs but still verifies tokens until Until
// (unix seconds), after which it is retired.
type Previous struct {
	Secret []byte
	Until  int64
}

// cmacLabel derives the token key: HMAC-SHA256(service key, cmacLabel)[:16]. It starts with
// 0xfe, which no Key.MAC message starts with.
const cmacLabel = "\xfeentrytoken/aes-cmac/v2"

// hashPair is pooled working state; payloads are copied into buf so that nothing on the
// caller's stack escapes through the hash.Hash interface.
type hashPair struct {
	in, out hash.Hash
	buf     []byte
	sum     []byte
}

// NewKey returns a keyring whose current key is secret (at least MinKeySize bytes; keys over
// 64 bytes are hashed first, as HMAC does) and that holds no previous key.
func NewKey(secret []byte) *Key {
	k := new(Key)
	k.SetKeys(secret)
	return k
}

// SetKeys makes secret the current key and previous the keys that still verify until their
// Until (a rotation); keys are prepared again only when they changed.
func (k *Key) SetKeys(secret []byte, previous ...Previous) {
	old := k.ring.Load()
	r := &ring{cur: reuse(old, secret, 0)}
	r.keys = append(r.keys, r.cur)
	for _, p := range previous {
		r.keys = append(r.keys, reuse(old, p.Secret, p.Until))
	}
	k.ring.Store(r)
}

// reuse prepares secret, or takes its prepared form from old when it is there.
func reuse(old *ring, secret []byte, until int64) *secretKey {
	id := KeyID(secret)
	if old != nil {
		for _, s := range old.keys {
			if s.id == id && s.until == until {
				return s
			}
		}
	}
	s := prepare(secret)
	s.until = until
	return s
}

// ID is the key id of the current key (what new tokens carry).
func (k *Key) ID() uint32 { return k.ring.Load().cur.id }

// KeyID is the short id of a service key that tokens carry: the first 4 bytes of
// HMAC-SHA256(secret, 0xfd "entrytoken/key-id"). It is derived, so every process agrees on
// it without coordination, and it reveals nothing useful of the key (a PRF output; key ids
// start with 0xfd, which no other message under the key starts with).
func KeyID(secret []byte) uint32 {
	s := prepare(secret)
	return s.id
}

func prepare(secret []byte) *secretKey {
	if len(secret) > 64 {
		s := sha256.Sum256(secret)
		secret = s[:]
	}
	var ipad, opad [64]byte
	copy(ipad[:], secret)
	copy(opad[:], secret)
	for i := range ipad {
		ipad[i] ^= 0x36
		opad[i] ^= 0x5c
	}
	k := new(secretKey)
	k.inner = padState(ipad[:])
	k.outer = padState(opad[:])
	sub := k.mac([]byte(cmacLabel))
	tok, err := newCMAC(sub[:16])
	if err != nil {
		panic("entrytoken: aes: " + err.Error())
	}
	k.tok = tok
	idm := k.mac([]byte(keyIDLabel))
	k.id = binary.BigEndian.Uint32(idm[:4])
	return k
}

// keyIDLabel derives a key's id (KeyID).
const keyIDLabel = "\xfdentrytoken/key-id"

func padState(pad []byte) []byte {
	h := sha256.New()
	h.Write(pad)
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic("entrytoken: sha256 state: " + err.Error())
	}
	return st
}

// mac is HMAC-SHA256 over payload (Key.MAC and the derivation of the token key).
func (k *secretKey) mac(payload []byte) [32]byte {
	hp, _ := k.pool.Get().(*hashPair)
	if hp == nil {
		hp = &hashPair{in: sha256.New(), out: sha256.New(), buf: make([]byte, 0, maxPayload), sum: make([]byte, 0, 32)}
	}
	if err := hp.in.(encoding.BinaryUnmarshaler).UnmarshalBinary(k.inner); err != nil {
		panic("entrytoken: sha256 state: " + err.Error())
	}
	hp.buf = append(hp.buf[:0], payload...)
	hp.in.Write(hp.buf)
	hp.sum = hp.in.Sum(hp.sum[:0])
	if err := hp.out.(encoding.BinaryUnmarshaler).UnmarshalBinary(k.outer); err != nil {
		panic("entrytoken: sha256 state: " + err.Error())
	}
	hp.out.Write(hp.sum)
	hp.sum = hp.out.Sum(hp.sum[:0])
	var sum [32]byte
	copy(sum[:], hp.sum)
	k.pool.Put(hp)
	return sum
}

// NewNonce returns a random nonce. Nonces only make tokens distinct; the tag protects them,
// so a fast non-cryptographic source suffices.
func NewNonce() uint64 { return rand.Uint64() }

func appendString(b []byte, s string) []byte {
	if len(s) > MaxString {
		s = s[:MaxString]
	}
	b = append(b, byte(len(s)))
	return append(b, s...)
}

func appendPayload(b []byte, id uint32, c *Claims) []byte {
	return binary.AppendUvarint(appendShared(b, id, c), uint64(c.CampaignID))
}

// appendShared appends the payload of c up to its campaign.
func appendShared(b []byte, id uint32, c *Claims) []byte {
	b = append(b, version, c.Kind)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.AppendUvarint(b, uint64(c.PublisherID))
	b = binary.AppendUvarint(b, uint64(c.ParticipantID))
	b = append(b, c.DeviceType)
	b = binary.AppendUvarint(b, uint64(c.Expires))
	b = binary.LittleEndian.AppendUint64(b, c.Nonce)
	b = appendString(b, c.DeviceID)
	return appendString(b, c.UserID)
}

// AppendToken appends the token of c to dst. It allocates nothing when dst has room for
// MaxTokenLen more bytes.
func (k *Key) AppendToken(dst []byte, c Claims) []byte {
	cur := k.ring.Load().cur
	var pbuf [maxPayload]byte
	payload := appendPayload(pbuf[:0], cur.id, &c)
	// The CMAC works in the spare capacity of dst (heap memory already; see cmac.sum), which
	// the token then overwrites.
	dst = slices.Grow(dst, base64.RawURLEncoding.EncodedLen(len(payload))+1+tagLen)
	var tag [TagSize]byte
	cur.tok.sum(&tag, dst[len(dst):len(dst)+TagSize], payload)
	dst = base64.RawURLEncoding.AppendEncode(dst, payload)
	dst = append(dst, '.')
	return base64.RawURLEncoding.AppendEncode(dst, tag[:TagSize])
}

// Sign returns the token of c.
func (k *Key) Sign(c Claims) string {
	return string(k.AppendToken(make([]byte, 0, MaxTokenLen), c))
}

// Verify checks token and returns its claims. A missing, malformed, forged or expired token
// (Expires <= now) is fault.Forbidden; so is one whose key id names no key of the ring, or a
// previous key retired at now, with the same answer as a forged one.
func (k *Key) Verify(token string, now int64) (Claims, error) {
	if token == "" {
		return Claims{}, fault.Forbidden("missing token")
	}
	if len(token) > MaxTokenLen {
		return Claims{}, fault.Forbidden("invalid token")
	}
	dot := -1
	for i := 0; i < len(token); i++ {
		if token[i] == '.' {
			dot = i
			break
		}
	}
	if dot < 0 {
		return Claims{}, fault.Forbidden("invalid token")
	}
	var pbuf [maxPayload + 3]byte
	var tbuf [TagSize + 3]byte
	pl, tg := token[:dot], token[dot+1:]
	if base64.RawURLEncoding.DecodedLen(len(pl)) > len(pbuf) || base64.RawURLEncoding.DecodedLen(len(tg)) != TagSize {
		return Claims{}, fault.Forbidden("invalid token")
	}
	n, err := base64.RawURLEncoding.Decode(pbuf[:], []byte(pl))
	if err != nil {
		return Claims{}, fault.Forbidden("invalid token")
	}
	payload := pbuf[:n]
	m, err := base64.RawURLEncoding.Decode(tbuf[:], []byte(tg))
	if err != nil || m != TagSize {
		return Claims{}, fault.Forbidden("invalid token")
	}
	if ok, unknown := k.ring.Load().check(payload, tbuf[:TagSize], now); !ok &&
		(!unknown || !k.verifyLooked(payload, tbuf[:TagSize], now)) {
		return Claims{}, fault.Forbidden("invalid token")
	}
	// Base64 has several encodings of one payload (trailing bits); only the canonical one
	// is accepted so that a token is one string.
	var cbuf [MaxTokenLen]byte
	if string(base64.RawURLEncoding.AppendEncode(cbuf[:0], payload)) != pl ||
		string(base64.RawURLEncoding.AppendEncode(cbuf[:0], tbuf[:TagSize])) != tg {
		return Claims{}, fault.Forbidden("invalid token")
	}
	c, ok := parsePayload(payload)
	if !ok {
		return Claims{}, fault.Forbidden("invalid token")
	}
	if c.Expires <= now {
		return Claims{}, fault.Forbidden("expired token")
	}
	return c, nil
}

// check reports whether tag is the tag of payload under a key of the ring not retired at
// now: the key the payload names (versions 3 and 4), or any of them (version 2, which names
// none); and, when it is not, whether the payload names a key id the ring does not hold at
// all (retired or not). Key ids are not secret, so the lookup need not be constant-time;
// each tag compare is.
func (r *ring) check(payload, tag []byte, now int64) (ok, unknown bool) {
	if len(payload) < headerLenNoKeyID {
		return false, false
	}
	var id uint32
	named := payload[0] == version || payload[0] == versionCampaignFirst
	switch {
	case named:
		if len(payload) < headerLen {
			return false, false
		}
		id = binary.BigEndian.Uint32(payload[2:headerLen])
	case payload[0] == versionNoKeyID:
	default:
		return false, false
	}
	// One working block serves every key tried (cmac.sum needs heap memory).
	var scratch []byte
	held := false
	for _, s := range r.keys {
		if named && s.id != id {
			continue
		}
		held = true
		if s.until != 0 && now >= s.until {
			continue
		}
		if scratch == nil {
			scratch = make([]byte, TagSize)
		}
		var want [TagSize]byte
		s.tok.sum(&want, scratch, payload)
		if subtle.ConstantTimeCompare(want[:], tag) == 1 {
			return true, false
		}
	}
	return false, named && !held
}

func parsePayload(b []byte) (Claims, bool) {
	var c Claims
	if len(b) == 0 {
		return c, false
	}
	hl := headerLen
	switch b[0] {
	case version, versionCampaignFirst:
	case versionNoKeyID:
		hl = headerLenNoKeyID
	default:
		return c, false
	}
	campaignLast := b[0] == version
	if len(b) < hl {
		return c, false
	}
	c.Kind = b[1]
	if c.Kind < KindOffer || c.Kind > KindSupport {
		return c, false
	}
	b = b[hl:]
	var ok bool
	var v uint64
	if v, b, ok = uvarint(b); !ok {
		return c, false
	}
	c.PublisherID = int64(v)
	if v, b, ok = uvarint(b); !ok {
		return c, false
	}
	c.ParticipantID = int64(v)
	if !campaignLast {
		if v, b, ok = uvarint(b); !ok {
			return c, false
		}
		c.CampaignID = int64(v)
	}
	if len(b) < 1 {
		return c, false
	}
	c.DeviceType, b = b[0], b[1:]
	if v, b, ok = uvarint(b); !ok {
		return c, false
	}
	c.Expires = int64(v)
	if len(b) < 8 {
		return c, false
	}
	c.Nonce, b = binary.LittleEndian.Uint64(b), b[8:]
	if c.DeviceID, b, ok = str(b); !ok {
		return c, false
	}
	if c.UserID, b, ok = str(b); !ok {
		return c, false
	}
	if campaignLast {
		if v, b, ok = uvarint(b); !ok {
			return c, false
		}
		c.CampaignID = int64(v)
	}
	if len(b) != 0 || c.PublisherID < 0 || c.ParticipantID < 0 || c.CampaignID < 0 || c.Expires < 0 {
		return c, false
	}
	return c, true
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, b, false
	}
	return v, b[n:], true
}

func str(b []byte) (string, []byte, bool) {
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return "", b, false
	}
	n := int(b[0])
	return string(b[1 : 1+n]), b[1+n:], true
}

// Sign returns the token of c under the service key secret. Prefer NewKey once and
// Key.Sign on hot paths.
func Sign(secret []byte, c Claims) string { return NewKey(secret).Sign(c) }

// Verify checks token under the service key secret at now (unix seconds); see Key.Verify.
func Verify(secret []byte, token string, now int64) (Claims, error) {
	return NewKey(secret).Verify(token, now)
}
