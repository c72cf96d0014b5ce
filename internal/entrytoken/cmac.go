package entrytoken

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
)

// Token tags are AES-CMAC (NIST SP 800-38B, RFC 4493) over the payload, under an AES-128 key
// derived from the service key. Why this is sound, and why this MAC:
//
//   - CMAC is a deterministic PRF-based MAC with a standard proof: with AES a PRP, forging a
//     tag for a payload not signed before succeeds with probability about q²/2^128 (q signed
//     blocks) plus 2^-128 per guess. Unlike GMAC/Poly1305 it needs no nonce, so there is no
//     nonce-reuse failure mode (a repeated 64-bit token nonce, expected after ~2^32 tokens,
//     would reveal a GMAC key); the token nonce only keeps tokens distinct.
//   - Payloads are not length-prefixed; CMAC does not need them to be (its final-block
//     subkeys K1/K2 separate a full last block from a padded one, so no extension or
//     padding ambiguity applies).
//   - The AES key is HMAC-SHA256(service key, 0xfe "entrytoken/aes-cmac/v2")[:16]: a PRF
//     output independent of every other use of the service key (Key.MAC messages start with
//     0xff). Recovering it is a 2^128 search, as guessing a 16-byte tag is.
//   - The tag is 16 bytes, as the truncated HMAC-SHA256 tag was; Verify compares it with
//     subtle.ConstantTimeCompare. AES runs on AES-NI (constant time), and the work depends on
//     the payload length only.
//
// On this hardware (no SHA extensions) HMAC-SHA256 costs four SHA-256 blocks per token in
// software; CMAC costs ⌈len/16⌉ AES-NI block encryptions (4–5 for an offer token).

// cmac is an AES-CMAC key: the cipher and the two subkeys.
type cmac struct {
	block  cipher.Block
	k1, k2 [16]byte
}

func newCMAC(key []byte) (*cmac, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	m := &cmac{block: b}
	var l [16]byte
	b.Encrypt(l[:], l[:])
	m.k1 = dbl(l)
	m.k2 = dbl(m.k1)
	return m, nil
}

// dbl is multiplication by x in GF(2^128) (RFC 4493 §2.3).
func dbl(v [16]byte) [16]byte {
	hi := binary.BigEndian.Uint64(v[:8])
	lo := binary.BigEndian.Uint64(v[8:])
	carry := hi >> 63
	hi = hi<<1 | lo>>63
	lo = lo<<1 ^ (0x87 & -carry) // constant time in the msb
	var r [16]byte
	binary.BigEndian.PutUint64(r[:8], hi)
	binary.BigEndian.PutUint64(r[8:], lo)
	return r
}

func xor16(dst []byte, a []byte, b *[16]byte) {
	_ = dst[15]
	_ = a[15]
	binary.LittleEndian.PutUint64(dst[:8], binary.LittleEndian.Uint64(dst[:8])^binary.LittleEndian.Uint64(a[:8])^binary.LittleEndian.Uint64(b[:8]))
	binary.LittleEndian.PutUint64(dst[8:16], binary.LittleEndian.Uint64(dst[8:16])^binary.LittleEndian.Uint64(a[8:16])^binary.LittleEndian.Uint64(b[8:16]))
}

var zero16 [16]byte

// sum writes the CMAC of msg to tag. x is 16 bytes of working memory that the cipher may see:
// it is passed through the cipher.Block interface, so it escapes, and callers hand in memory
// that is on the heap already (the spare capacity of the token's destination) rather than a
// stack array that would be moved to the heap on every call.
func (m *cmac) sum(tag *[16]byte, x []byte, msg []byte) {
	clear(x[:16])
	m.finish(tag, x, msg)
}

// absorb runs the whole 16-byte blocks of msg through the chaining value x (16 bytes, see
// sum), as CMAC does with every block but the last: the caller guarantees that more of the
// message follows msg. What is left over (len(msg) % 16 bytes) is not absorbed.
func (m *cmac) absorb(x []byte, msg []byte) {
	x = x[:16]
	for len(msg) >= 16 {
		xor16(x, msg[:16], &zero16)
		m.block.Encrypt(x, x)
		msg = msg[16:]
	}
}

// finish ends the CMAC whose chaining value x (16 bytes, see sum) covers the message before
// msg, the rest of the message, and writes the tag.
func (m *cmac) finish(tag *[16]byte, x []byte, msg []byte) {
	x = x[:16]
	for len(msg) > 16 {
		xor16(x, msg[:16], &zero16)
		m.block.Encrypt(x, x)
		msg = msg[16:]
	}
	var last [16]byte
	copy(last[:], msg)
	if len(msg) == 16 {
		xor16(x, last[:], &m.k1)
	} else {
		last[len(msg)] = 0x80
		xor16(x, last[:], &m.k2)
	}
	m.block.Encrypt(x, x)
	copy(tag[:], x)
}
