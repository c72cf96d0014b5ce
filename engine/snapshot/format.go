// Package snapshot is the file a serve process starts from instead of reading PostgreSQL:
// the engine input (campaigns), the panel (participants with their answers, entry history
// and activity) and the campaigns whose entries the panel left out, with the database
// position they are consistent at. A process writes one to local disk and streams one to a
// joining peer; a reader checks every frame before it hands out what the frame holds.
//
// The stream is the 8-byte magic, then frames: a kind byte, the payload's length (uint32,
// little-endian), the CRC-32C of the kind and the payload, the payload. The first frame is
// the header (format and schema versions, position), the last the end frame (how many
// values of each kind came before it); in between campaigns, then panel rows, then left-out
// campaign ids, several values a frame, no frame above MaxFrame bytes. A stream without its
// end frame, with a checksum that does not match, a count that differs, or of another
// format or schema, is refused whole.
package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// Magic opens every snapshot.
const Magic = "SWBSNAP\x00"

// FormatVersion is the version of the frame layout and of the values' binary forms; a
// reader refuses every other.
const FormatVersion = 1

// MaxFrame is the largest payload a frame holds: the memory a reader needs beyond what it
// loads.
const MaxFrame = 1 << 20

// frameHead is a frame's kind, length and checksum.
const frameHead = 9

// Frame kinds.
const (
	kindHeader    byte = 1
	kindCampaigns byte = 2
	kindPanel     byte = 3
	kindLeftOut   byte = 4
	kindEnd       byte = 0xff
)

// castagnoli is the CRC-32C table (hardware-accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Position is the database position a snapshot is consistent at: every change committed
// before it is in the snapshot; a process started from it re-reads what changed at or after
// it (DB.ChangePosition).
type Position struct {
	// XID is the oldest transaction id still running when the position was read: every
	// transaction below it had ended, and rows changed by any at or above it are re-read.
	XID uint64
	// SessionID is the last session id handed out then: entries of later sessions are
	// re-read.
	SessionID int64
	// At is when the position was read.
	At time.Time
}

// Header describes a snapshot.
type Header struct {
	Format int // FormatVersion of the writer
	// Schema is the database schema version (the latest migration) of the writer: a
	// process of another schema refuses the snapshot.
	Schema   int
	Position Position
	Written  time.Time // when the writer started
}

// Counts are how many values of each kind a snapshot holds.
type Counts struct {
	Campaigns, Participants, LeftOut int64
}

// Errors a reader returns; every one means the snapshot is not used.
var (
	ErrNotSnapshot = errors.New("snapshot: not a snapshot (bad magic)")
	ErrCorrupt     = errors.New("snapshot: corrupt")
	ErrTruncated   = errors.New("snapshot: truncated")
)

// VersionError is a snapshot of another format or schema.
type VersionError struct {
	What      string // "format" or "schema"
	Got, Want int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("snapshot: %s version %d, this process reads %d", e.What, e.Got, e.Want)
}

func checksum(kind byte, payload []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, []byte{kind}), castagnoli, payload)
}

func appendHeader(b []byte, h Header) []byte {
	b = binary.AppendUvarint(b, uint64(h.Format))
	b = binary.AppendUvarint(b, uint64(h.Schema))
	b = binary.AppendUvarint(b, h.Position.XID)
	b = binary.AppendVarint(b, h.Position.SessionID)
	b = binary.AppendVarint(b, h.Position.At.UnixNano())
	return binary.AppendVarint(b, h.Written.UnixNano())
}

func parseHeader(b []byte) (Header, error) {
	var h Header
	vals := make([]int64, 0, 6)
	for i := 0; i < 6; i++ {
		var v int64
		var n int
		if i < 3 {
			var u uint64
			u, n = binary.Uvarint(b)
			v = int64(u)
			if i < 2 && u > 1<<31 {
				n = -1
			}
		} else {
			v, n = binary.Varint(b)
		}
		if n <= 0 {
			return h, ErrCorrupt
		}
		vals = append(vals, v)
		b = b[n:]
	}
	h.Format, h.Schema = int(vals[0]), int(vals[1])
	h.Position = Position{XID: uint64(vals[2]), SessionID: vals[3], At: time.Unix(0, vals[4]).UTC()}
	h.Written = time.Unix(0, vals[5]).UTC()
	return h, nil
}

func appendCounts(b []byte, c Counts) []byte {
	b = binary.AppendUvarint(b, uint64(c.Campaigns))
	b = binary.AppendUvarint(b, uint64(c.Participants))
	return binary.AppendUvarint(b, uint64(c.LeftOut))
}

func parseCounts(b []byte) (Counts, error) {
	var vs [3]int64
	for i := range vs {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<62 {
			return Counts{}, ErrCorrupt
		}
		vs[i], b = int64(v), b[n:]
	}
	if len(b) != 0 {
		return Counts{}, ErrCorrupt
	}
	return Counts{vs[0], vs[1], vs[2]}, nil
}
