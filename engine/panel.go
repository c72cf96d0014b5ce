package engine

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/maphash"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Panel layout. The panel holds millions of participants, so it stores them
// in columns instead of one object per participant: each shard keeps flat
// slices indexed by a participant's row and one byte arena holding, per row,
// the key (publisher, user) followed by the packed answers. No pointer and no
// slice exists per participant or per answer; entries and device ids live in
// side maps of the rows that have them. Readers decode a row into a
// caller's Participant (Lookup, Range) or a fresh one (Get, GetByID).
const (
	panelShards = 64 // shards by (publisher, user); also id-index shards
	shardBits   = 6
	rowBits     = 32 - shardBits
	maxRows     = 1<<rowBits - 2 // a ref+1 must fit in uint32
	rowMask     = 1<<rowBits - 1 // the row+1 of a key table slot (see keyTag)
)

// ErrNoParticipantID is returned by Panel.Upsert for a new participant
// without an id: ids are assigned by persistence, never by the panel.
var ErrNoParticipantID = errors.New("engine: participant without id")

// ErrPanelFull is returned by Panel.Upsert when a shard holds the most rows
// its references can name (2^26 per shard, about 4·10^9 in all).
var ErrPanelFull = errors.New("engine: panel shard full")

// Panel is the concurrent in-memory store of participants, keyed by
// (publisher id, user identifier) and by participant id, packed in columns
// (a few dozen bytes per participant, see docs/performance.md). Writers
// update a participant's row in place under its shard's lock; readers decode
// it under the read lock, so a decoded Participant is a consistent profile.
type Panel struct {
	seed   maphash.Seed
	shards [panelShards]panelShard
	ids    [panelShards]idIndex
	length atomic.Int64
}

// panelShard holds the rows of the participants whose key hashes to it.
type panelShard struct {
	mu      sync.RWMutex
	id      []int64
	country []int32
	version []uint32 // bumped by every change of the row (Participant.Version)
	off     []uint32 // start of the row's record in arena
	ansLen  []uint16 // length of the packed answers after the key
	device  []uint8
	act     []uint64 // latest activity<<32 | bitmap of active days (atomic, see touchActivity)
	arena   []byte   // records, see record
	garbage int      // arena bytes no record uses any more
	table   []uint32 // open-addressed hash of the key: keyTag | row+1, 0 empty

	entries entryColumn // packed entry history of each row (panelentries.go)
}

// idIndex maps participant ids to rows: an open-addressed table of refs
// (shard<<rowBits | row) + 1. Lock order: an idIndex lock is taken before a
// shard lock, never while holding one.
type idIndex struct {
	mu    sync.RWMutex
	table []uint32
	n     int
}

// NewPanel returns an empty panel.
func NewPanel() *Panel {
	return &Panel{seed: maphash.MakeSeed()}
}

func (pl *Panel) keyHash(publisher int64, user string) uint64 {
	return maphash.String(pl.seed, user) ^ uint64(publisher)*0x9e3779b97f4a7c15
}

func idHash(id int64) uint64 {
	h := uint64(id) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

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

// keyAt reports whether the record of row r has the key (publisher, user).
func (s *panelShard) keyAt(r uint32, publisher int64, user string) bool {
	b := s.arena[s.off[r]:]
	pub, n := binary.Varint(b)
	if pub != publisher {
		return false
	}
	b = b[n:]
	ul, n := binary.Uvarint(b)
	b = b[n:]
	return ul == uint64(len(user)) && string(b[:ul]) == user
}

// find returns the row of (publisher, user) and the table slot where it is
// or would go.
func (s *panelShard) find(h uint64, publisher int64, user string) (row uint32, slot int, ok bool) {
	if len(s.table) == 0 {
		return 0, -1, false
	}
	for i := slotOf(h, len(s.table)); ; i = nextSlot(i, len(s.table)) {
		v := s.table[i]
		if v == 0 {
			return 0, i, false
		}
		if v&^rowMask == keyTag(h) && s.keyAt(v&rowMask-1, publisher, user) {
			return v&rowMask - 1, i, true
		}
	}
}

// growTable doubles the key table when it is three quarters full.
func (s *panelShard) growTable(pl *Panel) {
	if len(s.table) != 0 && 4*(len(s.id)+1) <= 3*len(s.table) {
		return
	}
	s.rehash(pl, max(len(s.table)*2, 64))
}

// rehash rebuilds the key table with n slots.
func (s *panelShard) rehash(pl *Panel, n int) {
	t := make([]uint32, n)
	for r := range uint32(len(s.id)) {
		rec := s.record(r)
		h := pl.keyHash(rec.pub, unsafe.String(unsafe.SliceData(rec.user), len(rec.user)))
		i := slotOf(h, n)
		for t[i] != 0 {
			i = nextSlot(i, n)
		}
		t[i] = keyTag(h) | r + 1
	}
	s.table = t
}

// keyTag is the part of a key table slot above the row: six bits of the
// key's hash (bits the shard and the slot do not use), so that a probe reads
// the record of another key only once in 64 times.
func keyTag(h uint64) uint32 { return uint32(h>>58) << rowBits }

// slotOf maps a hash to a slot of a table of n slots (any n, not only powers
// of two, so that a table sized from a row count needs no rounding up): the
// 32 hash bits above the shard bits scaled to [0, n).
func slotOf(h uint64, n int) int {
	return int(uint64(uint32(h>>shardBits)) * uint64(n) >> 32)
}

// nextSlot is linear probing with wrap-around.
func nextSlot(i, n int) int {
	if i++; i == n {
		return 0
	}
	return i
}

// tableLoad is the load an open-addressed table is sized for by Reserve and
// Trim: 4/0.72, about 5.6 bytes of table per row (tables double at 3/4, as append
// would, when rows come one by one).
const tableLoad = 0.72

// tableFor returns the slots for rows at tableLoad.
func tableFor(rows int) int {
	return max(64, int(float64(rows)/tableLoad)+1)
}

// Upsert stores the profile of (publisherID, user) and returns the stored
// participant (a copy: later changes do not show in it). A new participant
// takes prof as is (prof.ID is required); a known one keeps its id and
// entries and has its country, device and answers updated: each answered
// question of prof replaces the stored answer to that question (later
// impanels update the answers they carry). Entries in prof are merged,
// keeping the latest time per campaign. Answers are sorted and their texts
// normalized, and DeviceIDHash is computed here, once. at (unix seconds)
// counts as activity, and so does each entry of prof, as RecordEntry counts it (a
// participant read with its entries is then active on the days a load of its
// entries would make it).
func (pl *Panel) Upsert(publisherID int64, user string, prof Participant, at int64) (*Participant, error) {
	out := new(Participant)
	if err := pl.upsert(publisherID, user, &prof, at, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Put is Upsert without the returned copy: what a bulk load calls.
func (pl *Panel) Put(publisherID int64, user string, prof Participant, at int64) error {
	return pl.upsert(publisherID, user, &prof, at, nil)
}

func (pl *Panel) upsert(publisherID int64, user string, prof *Participant, at int64, out *Participant) error {
	h := pl.keyHash(publisherID, user)
	si := h % panelShards
	s := &pl.shards[si]
	s.mu.Lock()
	row, _, ok := s.find(h, publisherID, user)
	var old Participant
	if ok {
		s.decode(row, &old)
	} else {
		if prof.ID == 0 {
			s.mu.Unlock()
			return ErrNoParticipantID
		}
		if len(s.id) >= maxRows {
			s.mu.Unlock()
			return ErrPanelFull
		}
		s.growTable(pl)
		_, slot, _ := s.find(h, publisherID, user)
		row = uint32(len(s.id))
		s.table[slot] = keyTag(h) | row + 1
		s.id = append(s.id, prof.ID)
		s.country = append(s.country, 0)
		s.version = append(s.version, 0)
		s.off = append(s.off, noRecord)
		s.ansLen = append(s.ansLen, 0)
		s.device = append(s.device, 0)
		s.act = append(s.act, 0)
		old.ID = prof.ID
	}
	s.country[row] = prof.CountryID
	s.device[row] = prof.Device
	var buf [512]byte
	var packed []byte
	if !ok && answersReady(prof.Answers) {
		packed = appendAnswers(buf[:0], prof.Answers) // what mergeAnswers(nil, ...) would pack, without its copy
	} else {
		packed = appendAnswers(buf[:0], mergeAnswers(old.Answers, prof.Answers))
	}
	s.setRecord(row, publisherID, user, prof.DeviceID, packed)
	if len(prof.Entries) > 0 {
		entries := old.Entries
		for _, e := range prof.Entries {
			entries, _ = setEntry(entries, e)
		}
		s.entries.set(row, packEntries(s.entries.get(row), entries))
	}
	s.version[row]++
	touchActivity(&s.act[row], at)
	for _, e := range prof.Entries { // entries are activity, as RecordEntry records them
		touchActivity(&s.act[row], e.At)
	}
	if out != nil {
		s.decode(row, out)
	}
	s.mu.Unlock()
	if !ok {
		pl.index(prof.ID, uint32(si)<<rowBits|row)
		pl.length.Add(1)
	}
	return nil
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

// appendAnswers packs sorted answers: per answer the question id as a
// uvarint of its uint32 bits, uvarint len(Codes)<<1 | has-text, the codes
// likewise (ids and codes are small and non-negative: one or two bytes), then
// when has-text the text's length and bytes.
func appendAnswers(b []byte, answers []Answer) []byte {
	for i := range answers {
		a := &answers[i]
		b = binary.AppendUvarint(b, uint64(uint32(a.QuestionID)))
		hdr := uint64(len(a.Codes)) << 1
		if a.Text != "" {
			hdr |= 1
		}
		b = binary.AppendUvarint(b, hdr)
		for _, c := range a.Codes {
			b = binary.AppendUvarint(b, uint64(uint32(c)))
		}
		if a.Text != "" {
			b = binary.AppendUvarint(b, uint64(len(a.Text)))
			b = append(b, a.Text...)
		}
	}
	return b
}

// decodeAnswers unpacks answers into dst, reusing dst's buffers: the codes
// and texts of a decoded participant stay valid until the next decode into
// the same Participant value.
func decodeAnswers(b []byte, dst *Participant) {
	dst.Answers = dst.Answers[:0]
	dst.codeBuf = dst.codeBuf[:0]
	dst.textBuf = dst.textBuf[:0]
	for len(b) > 0 {
		q, n := binary.Uvarint(b)
		b = b[n:]
		hdr, n := binary.Uvarint(b)
		b = b[n:]
		a := Answer{QuestionID: int32(q)}
		if nc := int(hdr >> 1); nc > 0 {
			start := len(dst.codeBuf)
			for range nc {
				c, n := binary.Uvarint(b)
				b = b[n:]
				dst.codeBuf = append(dst.codeBuf, int32(c))
			}
			a.Codes = dst.codeBuf[start:len(dst.codeBuf):len(dst.codeBuf)]
		}
		if hdr&1 != 0 {
			tl, n := binary.Uvarint(b)
			b = b[n:]
			start := len(dst.textBuf)
			dst.textBuf = append(dst.textBuf, b[:tl]...)
			b = b[tl:]
			a.Text = unsafe.String(&dst.textBuf[start], int(tl))
		}
		dst.Answers = append(dst.Answers, a)
	}
}

// decode fills dst with row r (the caller holds the shard lock).
func (s *panelShard) decode(r uint32, dst *Participant) {
	dst.row = 0
	dst.ID = s.id[r]
	dst.CountryID = s.country[r]
	dst.Device = s.device[r]
	dst.Version = s.version[r]
	dst.Entries = decodeEntries(s.entries.get(r), dst.Entries[:0])
	rec := s.record(r)
	dst.PublisherID = rec.pub
	decodeAnswers(rec.answers, dst)
	dst.DeviceID, dst.DeviceIDHash = "", ""
	if len(rec.dev) > 0 {
		// After the answers: decodeAnswers resets textBuf.
		start := len(dst.textBuf)
		dst.textBuf = append(dst.textBuf, rec.dev...)
		dst.textBuf = hex.AppendEncode(dst.textBuf, rec.sum)
		t := dst.textBuf[start:]
		for i := len(rec.dev); i < len(t); i++ {
			if t[i] >= 'a' {
				t[i] -= 'a' - 'A'
			}
		}
		dst.DeviceID = unsafe.String(&t[0], len(rec.dev))
		dst.DeviceIDHash = unsafe.String(&t[len(rec.dev)], len(t)-len(rec.dev))
	}
}

// index records the row of a new participant id.
func (pl *Panel) index(id int64, ref uint32) {
	x := &pl.ids[idHash(id)%panelShards]
	x.mu.Lock()
	if 4*(x.n+1) > 3*len(x.table) {
		pl.rehashIDs(x, max(len(x.table)*2, 64))
	}
	n := len(x.table)
	i := slotOf(idHash(id), n)
	for x.table[i] != 0 {
		i = nextSlot(i, n)
	}
	x.table[i] = ref + 1
	x.n++
	x.mu.Unlock()
}

// rehashIDs rebuilds an id index with n slots (the caller holds x.mu).
func (pl *Panel) rehashIDs(x *idIndex, n int) {
	t := make([]uint32, n)
	for _, v := range x.table {
		if v == 0 {
			continue
		}
		i := slotOf(idHash(pl.idOf(v-1)), n)
		for t[i] != 0 {
			i = nextSlot(i, n)
		}
		t[i] = v
	}
	x.table = t
}

func (pl *Panel) idOf(ref uint32) int64 {
	s := &pl.shards[ref>>rowBits]
	s.mu.RLock()
	id := s.id[ref&(1<<rowBits-1)]
	s.mu.RUnlock()
	return id
}

// byID returns the ref of participant id.
func (pl *Panel) byID(id int64) (uint32, bool) {
	x := &pl.ids[idHash(id)%panelShards]
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.table) == 0 {
		return 0, false
	}
	n := len(x.table)
	for i := slotOf(idHash(id), n); x.table[i] != 0; i = nextSlot(i, n) {
		if ref := x.table[i] - 1; pl.idOf(ref) == id {
			return ref, true
		}
	}
	return 0, false
}

// mergeAnswers returns old with every question answered in upd replaced by
// upd's answers, sorted by question, texts normalized. Neither input is
// modified.
func mergeAnswers(old, upd []Answer) []Answer {
	out := make([]Answer, 0, len(old)+len(upd))
	for _, a := range old {
		if !slices.ContainsFunc(upd, func(u Answer) bool { return u.QuestionID == a.QuestionID }) {
			out = append(out, a)
		}
	}
	for _, u := range upd {
		u.Text = NormalizeText(u.Text)
		out = append(out, u)
	}
	slices.SortStableFunc(out, func(a, b Answer) int { return int(a.QuestionID) - int(b.QuestionID) })
	return out
}

// answersReady reports whether answers are already sorted by question with
// normalized texts, as a bulk load delivers them.
func answersReady(answers []Answer) bool {
	for i := range answers {
		if i > 0 && answers[i].QuestionID < answers[i-1].QuestionID || !isNormalized(answers[i].Text) {
			return false
		}
	}
	return true
}

// Lookup decodes the participant of (publisherID, user) into dst without
// allocating once dst's buffers have grown: dst's answers, codes and texts
// stay valid until the next decode into dst, so dst must not be shared or
// kept. It reports false for an unknown participant.
func (pl *Panel) Lookup(publisherID int64, user string, dst *Participant) bool {
	h := pl.keyHash(publisherID, user)
	s := &pl.shards[h%panelShards]
	s.mu.RLock()
	row, _, ok := s.find(h, publisherID, user)
	if ok {
		s.decode(row, dst)
		dst.row = (uint32(h%panelShards)<<rowBits | row) + 1
	}
	s.mu.RUnlock()
	return ok
}

// Get returns a copy of the participant of (publisherID, user).
func (pl *Panel) Get(publisherID int64, user string) (*Participant, bool) {
	p := new(Participant)
	if !pl.Lookup(publisherID, user, p) {
		return nil, false
	}
	p.row = 0 // a copy to keep, not a decoding to touch
	return p, true
}

// GetByID returns a copy of the participant with the given id.
func (pl *Panel) GetByID(id int64) (*Participant, bool) {
	p := new(Participant)
	if !pl.LookupByID(id, p) {
		return nil, false
	}
	p.row = 0 // a copy to keep, not a decoding to touch
	return p, true
}

// LookupByID decodes the participant with the given id into dst, as Lookup does by key:
// without allocating once dst's buffers have grown, valid until the next decode into dst.
// It is the entry's read of its participant, thousands a second.
func (pl *Panel) LookupByID(id int64, dst *Participant) bool {
	ref, ok := pl.byID(id)
	if !ok {
		return false
	}
	s := &pl.shards[ref>>rowBits]
	s.mu.RLock()
	s.decode(ref&(1<<rowBits-1), dst)
	dst.row = ref + 1
	s.mu.RUnlock()
	return true
}

// UserOf returns the publisher and the partner's user identifier of the participant with
// the given id: what a callback's redirect and postback name the participant by, without
// asking the database for it.
func (pl *Panel) UserOf(id int64) (publisherID int64, user string, ok bool) {
	ref, ok := pl.byID(id)
	if !ok {
		return 0, "", false
	}
	s := &pl.shards[ref>>rowBits]
	s.mu.RLock()
	rec := s.record(ref & (1<<rowBits - 1))
	publisherID, user = rec.pub, string(rec.user)
	s.mu.RUnlock()
	return publisherID, user, true
}

// RecordEntry notes that the participant entered campaignID at `at` (unix
// seconds): the entry history that reentry and relationships read, and
// activity. It reports false for an unknown participant.
func (pl *Panel) RecordEntry(participantID, campaignID, at int64) bool {
	ref, ok := pl.byID(participantID)
	if !ok {
		return false
	}
	s, r := &pl.shards[ref>>rowBits], ref&(1<<rowBits-1)
	s.mu.Lock()
	if entries, changed := recordEntry(s.entries.get(r), Entry{campaignID, at}); changed {
		s.entries.set(r, entries)
		s.version[r]++
	}
	touchActivity(&s.act[r], at)
	s.mu.Unlock()
	return true
}

// EntryRow is one entry of a participant into a campaign at At (unix seconds), as a bulk
// load hands them to RecordEntries.
type EntryRow struct {
	Participant, Campaign, At int64
}

// RecordEntries records every row as RecordEntry would, in order, and returns how many
// named a known participant (the others are ignored). It is the start-up load's form: rows
// in no particular order touch rows all over the panel, so RecordEntry spends its time
// waiting for memory and on two locks a row. RecordEntries resolves the participants of
// hundreds of rows under every id-index and shard read lock at once, then records each
// shard's rows of the batch under one write lock, the rows' independent memory reads
// overlapping; every lock is held for tens of microseconds at most.
func (pl *Panel) RecordEntries(rows []EntryRow) int {
	sc := entryScratchPool.Get().(*entryScratch)
	defer entryScratchPool.Put(sc)
	done := 0
	for len(rows) > 0 {
		n := min(len(rows), entryBatch)
		done += pl.recordEntries(rows[:n], sc)
		rows = rows[n:]
	}
	return done
}

// entryBatch is the most rows RecordEntries holds the panel's locks for at once.
const entryBatch = 4096

// entryScratch is RecordEntries' working memory (a few tens of KB, pooled).
type entryScratch struct {
	refs  [entryBatch]uint32 // each row's ref + 1 (0: unknown participant)
	order [entryBatch]uint16 // row indices grouped by shard
	count [panelShards + 1]int
	touch uint64 // what touching rows read (kept so that the reads are not left out)
}

var entryScratchPool = sync.Pool{New: func() any { return new(entryScratch) }}

func (pl *Panel) recordEntries(rows []EntryRow, sc *entryScratch) int {
	clear(sc.count[:])
	for i := 0; i < len(rows); i += refChunk {
		pl.resolveRefs(rows[i:min(i+refChunk, len(rows))], sc.refs[i:])
	}
	for _, v := range sc.refs[:len(rows)] {
		if v != 0 {
			sc.count[(v-1)>>rowBits+1]++
		}
	}
	// Rows grouped by shard, in their order (a counting sort).
	for i := 1; i <= panelShards; i++ {
		sc.count[i] += sc.count[i-1]
	}
	for k := range rows {
		if ref := sc.refs[k]; ref != 0 {
			si := (ref - 1) >> rowBits
			sc.order[sc.count[si]] = uint16(k)
			sc.count[si]++
		}
	}
	// count[si] is now the end of shard si's rows, count[si-1] their start.
	start := 0
	for si := range pl.shards {
		end := sc.count[si]
		if end == start {
			continue
		}
		s := &pl.shards[si]
		s.mu.Lock()
		// Touch the rows' memory first, in passes of independent reads (as above).
		var touch uint64
		for _, k := range sc.order[start:end] {
			r := (sc.refs[k] - 1) & (1<<rowBits - 1)
			touch += s.act[r] + uint64(s.version[r]) + uint64(len(s.entries.get(r)))
		}
		for _, k := range sc.order[start:end] {
			if e := s.entries.get((sc.refs[k] - 1) & (1<<rowBits - 1)); len(e) > 0 {
				touch += uint64(e[0])
			}
		}
		sc.touch += touch
		for _, k := range sc.order[start:end] {
			row, r := &rows[k], (sc.refs[k]-1)&(1<<rowBits-1)
			if entries, changed := recordEntry(s.entries.get(r), Entry{row.Campaign, row.At}); changed {
				s.entries.set(r, entries)
				s.version[r]++
			}
			if v, changed := touchedActivity(s.act[r], row.At); changed {
				s.act[r] = v // no CAS: the exclusive lock keeps Touch out
			}
		}
		s.mu.Unlock()
		start = end
	}
	return start
}

// refChunk is the most rows resolveRefs resolves under the panel's read locks at once
// (tens of microseconds: a writer, and the readers queued behind it, wait no longer).
const refChunk = 512

// resolveRefs sets refs[k] to the ref + 1 of rows[k]'s participant (0: unknown), under every
// id-index then every shard read lock (the lock order of byID). Each row's first candidate
// slot, then its check, then (rarely) the rest of its probe: passes of independent reads,
// which the processor overlaps, rather than one row's chain of cache misses after another's.
func (pl *Panel) resolveRefs(rows []EntryRow, refs []uint32) {
	for i := range pl.ids {
		pl.ids[i].mu.RLock()
	}
	for i := range pl.shards {
		pl.shards[i].mu.RLock()
	}
	for k := range rows {
		id := rows[k].Participant
		x := &pl.ids[idHash(id)%panelShards]
		if n := len(x.table); n > 0 {
			refs[k] = x.table[slotOf(idHash(id), n)]
		} else {
			refs[k] = 0
		}
	}
	for k := range rows {
		if v, id := refs[k], rows[k].Participant; v == 0 || pl.shards[(v-1)>>rowBits].id[(v-1)&(1<<rowBits-1)] != id {
			refs[k] = pl.refLocked(id)
		}
	}
	for i := range pl.shards {
		pl.shards[i].mu.RUnlock()
	}
	for i := range pl.ids {
		pl.ids[i].mu.RUnlock()
	}
}

// refLocked returns participant id's ref + 1, 0 when unknown (the caller holds the read
// locks of the id index and of every shard).
func (pl *Panel) refLocked(id int64) uint32 {
	x := &pl.ids[idHash(id)%panelShards]
	n := len(x.table)
	if n == 0 {
		return 0
	}
	for i := slotOf(idHash(id), n); x.table[i] != 0; i = nextSlot(i, n) {
		v := x.table[i]
		if s := &pl.shards[(v-1)>>rowBits]; s.id[(v-1)&(1<<rowBits-1)] == id {
			return v
		}
	}
	return 0
}

// Touch records activity of the participant at `at` (for example an offer
// request); it reports false for an unknown participant.
func (pl *Panel) Touch(participantID, at int64) bool {
	ref, ok := pl.byID(participantID)
	if !ok {
		return false
	}
	s, r := &pl.shards[ref>>rowBits], ref&(1<<rowBits-1)
	s.mu.RLock()
	touchActivity(&s.act[r], at)
	s.mu.RUnlock()
	return true
}

// TouchDecoded is Touch for a participant that Lookup or LookupByID decoded into p: it
// reads the row they found instead of finding it again (two shared locks fewer, which
// every offers answer takes on cores that share them). A p that names no row of this
// panel's participant p.ID is touched by id.
func (pl *Panel) TouchDecoded(p *Participant, at int64) bool {
	if p.row == 0 {
		return pl.Touch(p.ID, at)
	}
	ref := p.row - 1
	s, r := &pl.shards[ref>>rowBits], ref&(1<<rowBits-1)
	s.mu.RLock()
	ok := int(r) < len(s.id) && s.id[r] == p.ID
	if ok {
		touchActivity(&s.act[r], at)
	}
	s.mu.RUnlock()
	if !ok {
		return pl.Touch(p.ID, at)
	}
	return true
}

// Activity returns the participant's recent activity.
func (pl *Panel) Activity(participantID int64) (Activity, bool) {
	ref, ok := pl.byID(participantID)
	if !ok {
		return Activity{}, false
	}
	s, r := &pl.shards[ref>>rowBits], ref&(1<<rowBits-1)
	s.mu.RLock()
	a := readActivity(&s.act[r])
	s.mu.RUnlock()
	return a, true
}

// Reserve sizes the panel for n participants in all before a bulk load: each
// shard's columns and both open-addressed tables are allocated once for its
// share of n (with a little room for an uneven spread), so that the load
// neither copies columns as they grow nor rehashes, and the arena grows to
// its expected size in one or two steps (growArena). It never shrinks what
// the panel holds; Trim returns what an estimate too high left unused.
func (pl *Panel) Reserve(n int) {
	if n <= 0 {
		return
	}
	per := n/panelShards + n/panelShards/50 + 64
	for i := range pl.shards {
		s := &pl.shards[i]
		s.mu.Lock()
		if cap(s.id) < per {
			s.setCap(per)
		}
		if len(s.table) < tableFor(per) {
			s.rehash(pl, tableFor(per))
		}
		s.mu.Unlock()
	}
	for i := range pl.ids {
		x := &pl.ids[i]
		x.mu.Lock()
		if len(x.table) < tableFor(per) {
			pl.rehashIDs(x, tableFor(per))
		}
		x.mu.Unlock()
	}
}

// Trim returns the room a bulk load left unused: columns and arenas with
// more than 1/64 spare capacity are copied to their exact length (garbage
// compacted away), and tables less than half full are rebuilt at tableLoad.
// It locks one shard at a time, so readers and writers carry on meanwhile.
func (pl *Panel) Trim() {
	for i := range pl.shards {
		s := &pl.shards[i]
		s.mu.Lock()
		rows := len(s.id)
		if cap(s.id)-rows > rows/64 {
			s.setCap(rows)
		}
		if s.garbage > 0 {
			s.compact(0)
		} else if cap(s.arena)-len(s.arena) > len(s.arena)/64 {
			s.arena = slices.Clone(s.arena)
		}
		if 2*rows < len(s.table) && tableFor(rows) < len(s.table) {
			s.rehash(pl, tableFor(rows))
		}
		s.entries.trim()
		s.mu.Unlock()
	}
	for i := range pl.ids {
		x := &pl.ids[i]
		x.mu.Lock()
		if 2*x.n < len(x.table) && tableFor(x.n) < len(x.table) {
			pl.rehashIDs(x, tableFor(x.n))
		}
		x.mu.Unlock()
	}
}

// setCap copies the row columns to slices of capacity c ≥ their length
// (the caller holds the write lock; act is read atomically under the read
// lock only, so replacing it under the write lock is safe).
func (s *panelShard) setCap(c int) {
	s.id = withCap(s.id, c)
	s.country = withCap(s.country, c)
	s.version = withCap(s.version, c)
	s.off = withCap(s.off, c)
	s.ansLen = withCap(s.ansLen, c)
	s.device = withCap(s.device, c)
	s.act = withCap(s.act, c)
}

func withCap[T any](col []T, c int) []T {
	out := make([]T, len(col), c)
	copy(out, col)
	return out
}

// Len returns the number of participants.
func (pl *Panel) Len() int { return int(pl.length.Load()) }

// rangeChunk is how many rows RangeActivity copies under one hold of a shard's lock.
const rangeChunk = 256

// RangeActivity calls fn with the id and activity of every participant until fn returns
// false, as Range sees them but without decoding answers or entries: writing activity back
// walks the whole panel every few minutes and needs nothing else. No lock is held while fn
// runs.
func (pl *Panel) RangeActivity(fn func(id int64, a Activity) bool) {
	var ids [rangeChunk]int64
	var acts [rangeChunk]Activity
	for i := range pl.shards {
		s := &pl.shards[i]
		for r := 0; ; {
			s.mu.RLock()
			n := min(rangeChunk, len(s.id)-r)
			for k := 0; k < n; k++ {
				ids[k], acts[k] = s.id[r+k], readActivity(&s.act[r+k])
			}
			s.mu.RUnlock()
			if n <= 0 {
				break
			}
			for k := range n {
				if !fn(ids[k], acts[k]) {
					return
				}
			}
			r += n
		}
	}
}

// Range calls fn for every participant with its activity until fn returns
// false. It sees each participant once, as stored at the time it is reached.
// p is decoded into one reused Participant: fn must not keep it (nor its
// answers) after it returns. No lock is held while fn runs.
func (pl *Panel) Range(fn func(p *Participant, a Activity) bool) {
	var p Participant
	var a Activity
	pl.rangeRows(func(s *panelShard, r uint32) {
		s.decode(r, &p)
		a = readActivity(&s.act[r])
	}, func() bool { return fn(&p, a) })
}

// rangeRows calls read for every row with its shard's read lock held, then yield without it,
// until yield returns false.
func (pl *Panel) rangeRows(read func(s *panelShard, r uint32), yield func() bool) {
	for i := range pl.shards {
		s := &pl.shards[i]
		for r := uint32(0); ; r++ {
			s.mu.RLock()
			if int(r) >= len(s.id) {
				s.mu.RUnlock()
				break
			}
			read(s, r)
			s.mu.RUnlock()
			if !yield() {
				return
			}
		}
	}
}
