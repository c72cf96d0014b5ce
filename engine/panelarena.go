package engine

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"math"
	"slices"
)

// The arena: each shard keeps one byte slice holding, per row, a record with
// the row's key, device id and packed answers (panelcodec.go), addressed by
// the row's off and ansLen columns. A record is rewritten in place when it
// still fits, else appended anew; the old bytes are garbage until compact
// rewrites the arena with the live records only.

// record is a row's record in the arena: varint publisher, uvarint
// len(user), user, uvarint len(device id), device id, the 20-byte SHA-1 of
// HashDeviceID when there is a device id, then the packed answers.
type record struct {
	pub       int64
	user, dev []byte
	sum       []byte // nil without a device id
	head      int    // bytes before the answers
	answers   []byte
}

// record parses the record of row r (the caller holds the shard lock).
func (s *panelShard) record(r uint32) record {
	return parseRecord(s.arena[s.off[r]:], int(s.ansLen[r]))
}

// parseRecord parses the record at the start of b, whose answers take
// ansLen bytes.
func parseRecord(b []byte, ansLen int) record {
	var rec record
	pub, n := binary.Varint(b)
	rec.pub = pub
	ul, m := binary.Uvarint(b[n:])
	i := n + m
	rec.user = b[i : i+int(ul)]
	i += int(ul)
	dl, m := binary.Uvarint(b[i:])
	i += m
	rec.dev = b[i : i+int(dl)]
	i += int(dl)
	if dl > 0 {
		rec.sum = b[i : i+sha1.Size]
		i += sha1.Size
	}
	rec.head = i
	rec.answers = b[i : i+ansLen]
	return rec
}

// appendRecord appends a record to the arena and returns its offset.
func (s *panelShard) appendRecord(pub int64, user, dev, sum, answers []byte) uint32 {
	off := uint32(len(s.arena))
	if need := 2*binary.MaxVarintLen64 + len(user) + len(dev) + len(sum) + len(answers); cap(s.arena)-len(s.arena) < need {
		s.growArena(need)
	}
	s.arena = binary.AppendVarint(s.arena, pub)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(user)))
	s.arena = append(s.arena, user...)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(dev)))
	if len(dev) > 0 {
		s.arena = append(s.arena, dev...)
		s.arena = append(s.arena, sum...)
	}
	s.arena = append(s.arena, answers...)
	return off
}

// growArena makes room for need more bytes. While the row columns have
// room reserved (Reserve), the arena grows to what the reserved rows will
// take at the records' mean size so far, so that a bulk load copies it once
// or twice instead of at every doubling; otherwise it grows as append would.
func (s *panelShard) growArena(need int) {
	if rows := len(s.id); rows > 16 && cap(s.id) > rows {
		est := (len(s.arena) - s.garbage) / rows * cap(s.id) * 17 / 16
		if est >= len(s.arena)+need && est > cap(s.arena)+cap(s.arena)/4 {
			a := make([]byte, len(s.arena), est)
			copy(a, s.arena)
			s.arena = a
			return
		}
	}
	s.arena = slices.Grow(s.arena, need)
}

// panelCompactMin is the garbage (bytes) below which a shard never
// compacts its arena; above it, a shard compacts once a quarter of its arena
// is garbage.
var panelCompactMin = 1 << 20

// noRecord marks a new row whose record is not written yet.
const noRecord = math.MaxUint32

// setRecord stores packed answers and the device id (kept when dev is "")
// of row r: in place when the device id stays and the answers fit in the
// row's span, else as a new record at the end of the arena (the old one
// becomes garbage, reclaimed by compact).
func (s *panelShard) setRecord(r uint32, pub int64, user, dev string, packed []byte) {
	if len(packed) > math.MaxUint16 {
		packed = packed[:0] // cannot happen with validated profiles; keep the row consistent
	}
	if s.off[r] == noRecord {
		var sum []byte
		if dev != "" {
			sum = deviceSum(dev)
		}
		s.off[r] = s.appendRecord(pub, []byte(user), []byte(dev), sum, packed)
		s.ansLen[r] = uint16(len(packed))
		return
	}
	rec := s.record(r)
	if (dev == "" || dev == string(rec.dev)) && len(packed) <= len(rec.answers) {
		copy(rec.answers, packed)
		s.garbage += len(rec.answers) - len(packed)
		s.ansLen[r] = uint16(len(packed))
		return
	}
	devB, sum := rec.dev, rec.sum
	if dev != "" && dev != string(rec.dev) {
		devB, sum = []byte(dev), deviceSum(dev)
	}
	s.garbage += rec.head + len(rec.answers)
	s.off[r] = s.appendRecord(pub, rec.user, devB, sum, packed)
	s.ansLen[r] = uint16(len(packed))
	if s.garbage > panelCompactMin && s.garbage > len(s.arena)/4 {
		s.compact(8)
	}
}

// deviceSum returns the SHA-1 that HashDeviceID(dev) spells in hex.
func deviceSum(dev string) []byte {
	sum, _ := hex.DecodeString(HashDeviceID(dev))
	return sum
}

// compact rewrites the arena with the live records only, leaving room for
// live/slack more bytes (none when slack is 0).
func (s *panelShard) compact(slack int) {
	live := len(s.arena) - s.garbage
	room := 0
	if slack > 0 {
		room = live / slack
	}
	a := make([]byte, 0, live+room)
	for r := range s.off {
		start := int(s.off[r])
		rec := s.record(uint32(r))
		s.off[r] = uint32(len(a))
		a = append(a, s.arena[start:start+rec.head+len(rec.answers)]...)
	}
	s.arena, s.garbage = a, 0
}
