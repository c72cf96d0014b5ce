// Package identity keys a publisher's participant identifiers (user, device) in the memory of
// one process: the offers answer cache and the device sightings hash them the same way, and
// read them as strings without copying.
package identity

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"
)

// Hash hashes a publisher's identifiers (user, device; each at most 255 bytes, so the length
// of the first makes the pair split one way) and a tag, for the in-memory keys of one
// process (the answer cache, the sightings).
func Hash(seed maphash.Seed, pub int64, tag uint8, first, second []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var head [10]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(pub))
	head[8], head[9] = tag, byte(len(first))
	h.Write(head[:])
	h.Write(first)
	h.Write(second)
	return h.Sum64()
}

// View views b as a string without copying. The string must not outlive b nor be kept: it
// serves map lookups and comparisons during one request, and the rows of one sightings
// flush.
func View(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
