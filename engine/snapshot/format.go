// Package snapshot is the file a serve process starts from instead of reading PostgreSQL:
// the engine input (campaigns), the panel (participants with their answers, entry history
// and activity), the campaigns whose entries the panel left out, the live counters (of every
// quota and campaign of the engine input) and the blocked set of participant quality, with
// the database position they are consistent at. A process writes one to local disk and streams one to a
// joining peer; a reader checks every frame before it hands out what the frame holds.
//
// The stream is the 8-byte magic, then frames: a kind byte, the payload's length (uint32,
// little-endian), the CRC-32C of the kind and the payload, the payload. The first frame is
// the header (format and schema versions, position), the last the end frame (how many
// values of each kind came before it); in between campaigns, then panel rows, then left-out
// campaign ids, then quota counts, campaign counts and quality blocks, several values a
// frame, no frame above MaxFrame bytes. A stream without its end frame, with a checksum that
// does not match, a count that differs, or of another format or schema, is refused whole.
//
// Format 2 added the counters and the blocks (three frame kinds, three counts in the end
// frame). A reader of format 2 also reads format 1, which carries neither: its caller loads
// them from the database (Header.Format says which it got). A reader of format 1 refuses a
// format 2 snapshot with a *VersionError, before any value, and loads from the database.
package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/switchboard/switchboard/engine"
)

// Magic opens every snapshot.
const Magic = "SWBSNAP\x00"

// FormatVersion is the version of the frame layout and of the values' binary forms that
// this package writes; a reader reads it and MinFormatVersion to it, and refuses every other.
const FormatVersion = 2

// MinFormatVersion is the oldest format a reader reads: format 1, without counters and
// blocks.
const MinFormatVersion = 1

// countersFormat is the first format that carries counters and blocks.
const countersFormat = 2

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
	// Format 2:
	kindQuotaCounts    byte = 5
	kindCampaignCounts byte = 6
	kindBlocks         byte = 7
	kindEnd            byte = 0xff
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
	// Format 2: quota counters, campaign counters, quality blocks.
	QuotaCounts, CampaignCounts, Blocks int64
}

// Block is a participant's latest quality block as a process's blocked set holds it.
type Block struct {
	ParticipantID, PublisherID int64
	User                       string // the publisher's identifier of the participant
	Class                      string // the rule class that blocked
	BlockedAt, Until           int64  // unix seconds; Until: expiry or lifting
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
	for _, v := range [...]int64{c.Campaigns, c.Participants, c.LeftOut, c.QuotaCounts, c.CampaignCounts, c.Blocks} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

// parseCounts parses an end frame of the given format: three counts in format 1, six after.
func parseCounts(b []byte, format int) (Counts, error) {
	var vs [6]int64
	k := len(vs)
	if format < countersFormat {
		k = 3
	}
	for i := range k {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > 1<<62 {
			return Counts{}, ErrCorrupt
		}
		vs[i], b = int64(v), b[n:]
	}
	if len(b) != 0 {
		return Counts{}, ErrCorrupt
	}
	return Counts{vs[0], vs[1], vs[2], vs[3], vs[4], vs[5]}, nil
}

func appendQuotaCount(b []byte, id int64, v engine.QuotaCounts) []byte {
	b = binary.AppendVarint(b, id)
	b = binary.AppendVarint(b, v.Completes)
	b = binary.AppendVarint(b, v.InProgress)
	return binary.AppendVarint(b, v.Entries)
}

func appendCampaignCount(b []byte, id int64, v engine.CampaignCounts) []byte {
	b = binary.AppendVarint(b, id)
	b = binary.AppendVarint(b, v.Day)
	b = binary.AppendVarint(b, v.DayCompletes)
	b = binary.AppendVarint(b, v.Sessions)
	return binary.AppendVarint(b, v.Completes)
}

func appendBlock(b []byte, k Block) []byte {
	b = binary.AppendVarint(b, k.ParticipantID)
	b = binary.AppendVarint(b, k.PublisherID)
	b = binary.AppendUvarint(b, uint64(len(k.User)))
	b = append(b, k.User...)
	b = binary.AppendUvarint(b, uint64(len(k.Class)))
	b = append(b, k.Class...)
	b = binary.AppendVarint(b, k.BlockedAt)
	return binary.AppendVarint(b, k.Until)
}

// varints parses len(dst) varints off b.
func varints(b []byte, dst []int64) ([]byte, error) {
	for i := range dst {
		v, n := binary.Varint(b)
		if n <= 0 {
			return b, ErrCorrupt
		}
		dst[i], b = v, b[n:]
	}
	return b, nil
}

// text parses a length-prefixed string off b.
func text(b []byte) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", b, ErrCorrupt
	}
	return string(b[k : k+int(n)]), b[k+int(n):], nil
}

func parseQuotaCount(b []byte) (int64, engine.QuotaCounts, []byte, error) {
	var v [4]int64
	b, err := varints(b, v[:])
	return v[0], engine.QuotaCounts{Completes: v[1], InProgress: v[2], Entries: v[3]}, b, err
}

func parseCampaignCount(b []byte) (int64, engine.CampaignCounts, []byte, error) {
	var v [5]int64
	b, err := varints(b, v[:])
	return v[0], engine.CampaignCounts{Day: v[1], DayCompletes: v[2], Sessions: v[3], Completes: v[4]}, b, err
}

func parseBlock(b []byte) (Block, []byte, error) {
	var k Block
	var ids [2]int64
	var err error
	if b, err = varints(b, ids[:]); err != nil {
		return k, b, err
	}
	k.ParticipantID, k.PublisherID = ids[0], ids[1]
	if k.User, b, err = text(b); err != nil {
		return k, b, err
	}
	if k.Class, b, err = text(b); err != nil {
		return k, b, err
	}
	var at [2]int64
	b, err = varints(b, at[:])
	k.BlockedAt, k.Until = at[0], at[1]
	return k, b, err
}
