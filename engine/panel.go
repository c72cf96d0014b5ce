package engine

import (
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"
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

// NewPanel returns an empty panel.
func NewPanel() *Panel {
	return &Panel{seed: maphash.MakeSeed()}
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
		var err error
		if row, err = s.addRow(pl, h, publisherID, user, prof.ID); err != nil {
			s.mu.Unlock()
			return err
		}
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

// addRow appends an empty row for the new participant id with key
// (publisher, user) and enters it in the key table (the caller holds the
// write lock). Its record is written by setRecord.
func (s *panelShard) addRow(pl *Panel, h uint64, publisher int64, user string, id int64) (uint32, error) {
	if id == 0 {
		return 0, ErrNoParticipantID
	}
	if len(s.id) >= maxRows {
		return 0, ErrPanelFull
	}
	s.growTable(pl)
	_, slot, _ := s.find(h, publisher, user)
	row := uint32(len(s.id))
	s.table[slot] = keyTag(h) | row + 1
	s.id = append(s.id, id)
	s.country = append(s.country, 0)
	s.version = append(s.version, 0)
	s.off = append(s.off, noRecord)
	s.ansLen = append(s.ansLen, 0)
	s.device = append(s.device, 0)
	s.act = append(s.act, 0)
	return row, nil
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

// Len returns the number of participants.
func (pl *Panel) Len() int { return int(pl.length.Load()) }
