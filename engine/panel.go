package engine

import (
	"errors"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

// panelShards spreads the panel over independently locked maps.
const panelShards = 64

// ErrNoParticipantID is returned by Panel.Upsert for a new participant
// without an id: ids are assigned by persistence, never by the panel.
var ErrNoParticipantID = errors.New("engine: participant without id")

// Panel is the concurrent in-memory store of participants, keyed by
// (publisher id, user identifier) and by participant id. Each participant is
// an immutable *Participant replaced copy-on-write, so a reader holds a
// consistent profile without locks while writers update it.
type Panel struct {
	seed   maphash.Seed
	byKey  [panelShards]keyShard
	byID   [panelShards]idShard
	length atomic.Int64
}

type panelKey struct {
	publisher int64
	user      string
}

type keyShard struct {
	mu sync.RWMutex
	m  map[panelKey]*panelRecord
}

type idShard struct {
	mu sync.RWMutex
	m  map[int64]*panelRecord
}

type panelRecord struct {
	mu       sync.Mutex // serializes writers of this participant
	p        atomic.Pointer[Participant]
	activity activityCell
}

// NewPanel returns an empty panel.
func NewPanel() *Panel {
	pl := &Panel{seed: maphash.MakeSeed()}
	for i := range pl.byKey {
		pl.byKey[i].m = make(map[panelKey]*panelRecord)
		pl.byID[i].m = make(map[int64]*panelRecord)
	}
	return pl
}

func (pl *Panel) keyShard(k panelKey) *keyShard {
	h := maphash.String(pl.seed, k.user) ^ uint64(k.publisher)*0x9e3779b97f4a7c15
	return &pl.byKey[h%panelShards]
}

func (pl *Panel) idShard(id int64) *idShard {
	return &pl.byID[uint64(id)*0x9e3779b97f4a7c15>>58]
}

// Upsert stores the profile of (publisherID, user) and returns the stored
// participant. A new participant takes prof as is (prof.ID is required);
// a known one keeps its id and entries and has its country, device and
// answers updated: each answered question of prof replaces the stored answer
// to that question (later impanels update the answers they carry). Entries in
// prof are merged, keeping the latest time per campaign. Answers are sorted
// and their texts normalized, and DeviceIDHash is computed here, once. at
// (unix seconds) counts as activity.
func (pl *Panel) Upsert(publisherID int64, user string, prof Participant, at int64) (*Participant, error) {
	k := panelKey{publisherID, user}
	ks := pl.keyShard(k)
	ks.mu.Lock()
	rec := ks.m[k]
	if rec == nil {
		if prof.ID == 0 {
			ks.mu.Unlock()
			return nil, ErrNoParticipantID
		}
		rec = new(panelRecord)
		rec.p.Store(&Participant{ID: prof.ID})
		ks.m[k] = rec
		is := pl.idShard(prof.ID)
		is.mu.Lock()
		is.m[prof.ID] = rec
		is.mu.Unlock()
		pl.length.Add(1)
	}
	ks.mu.Unlock()

	rec.mu.Lock()
	old := rec.p.Load()
	n := &Participant{
		ID:           old.ID,
		CountryID:    prof.CountryID,
		Device:       prof.Device,
		DeviceID:     old.DeviceID,
		DeviceIDHash: old.DeviceIDHash,
		Answers:      mergeAnswers(old.Answers, prof.Answers),
		Entries:      old.Entries,
	}
	if prof.DeviceID != "" && prof.DeviceID != old.DeviceID {
		n.DeviceID, n.DeviceIDHash = prof.DeviceID, HashDeviceID(prof.DeviceID)
	}
	for _, e := range prof.Entries {
		n.Entries, _ = withEntry(n.Entries, e)
	}
	rec.p.Store(n)
	rec.mu.Unlock()
	rec.activity.touch(at)
	return n, nil
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
		u.Codes = slices.Clone(u.Codes)
		out = append(out, u)
	}
	slices.SortStableFunc(out, func(a, b Answer) int { return int(a.QuestionID) - int(b.QuestionID) })
	return out
}

// withEntry returns a copy of the sorted entries with e recorded (the later
// time wins for a campaign entered before), or entries itself and false when
// e changes nothing.
func withEntry(entries []Entry, e Entry) ([]Entry, bool) {
	i, found := slices.BinarySearchFunc(entries, e.CampaignID, func(x Entry, id int64) int { return cmpInt64(x.CampaignID, id) })
	if found {
		if entries[i].At >= e.At {
			return entries, false
		}
		out := slices.Clone(entries)
		out[i].At = e.At
		return out, true
	}
	out := make([]Entry, 0, len(entries)+1)
	out = append(out, entries[:i]...)
	out = append(out, e)
	return append(out, entries[i:]...), true
}

// Get returns the participant of (publisherID, user).
func (pl *Panel) Get(publisherID int64, user string) (*Participant, bool) {
	k := panelKey{publisherID, user}
	ks := pl.keyShard(k)
	ks.mu.RLock()
	rec := ks.m[k]
	ks.mu.RUnlock()
	if rec == nil {
		return nil, false
	}
	return rec.p.Load(), true
}

func (pl *Panel) record(id int64) *panelRecord {
	is := pl.idShard(id)
	is.mu.RLock()
	rec := is.m[id]
	is.mu.RUnlock()
	return rec
}

// GetByID returns the participant with the given id.
func (pl *Panel) GetByID(id int64) (*Participant, bool) {
	if rec := pl.record(id); rec != nil {
		return rec.p.Load(), true
	}
	return nil, false
}

// RecordEntry notes that the participant entered campaignID at `at` (unix
// seconds): the entry history that reentry and relationships read, and
// activity. It reports false for an unknown participant.
func (pl *Panel) RecordEntry(participantID, campaignID, at int64) bool {
	rec := pl.record(participantID)
	if rec == nil {
		return false
	}
	rec.mu.Lock()
	old := rec.p.Load()
	if entries, changed := withEntry(old.Entries, Entry{campaignID, at}); changed {
		n := *old
		n.Entries = entries
		rec.p.Store(&n)
	}
	rec.mu.Unlock()
	rec.activity.touch(at)
	return true
}

// Touch records activity of the participant at `at` (for example an offer
// request); it reports false for an unknown participant.
func (pl *Panel) Touch(participantID, at int64) bool {
	rec := pl.record(participantID)
	if rec == nil {
		return false
	}
	rec.activity.touch(at)
	return true
}

// Activity returns the participant's recent activity.
func (pl *Panel) Activity(participantID int64) (Activity, bool) {
	rec := pl.record(participantID)
	if rec == nil {
		return Activity{}, false
	}
	return rec.activity.read(), true
}

// Len returns the number of participants.
func (pl *Panel) Len() int { return int(pl.length.Load()) }

// Range calls fn for every participant with its activity until fn returns
// false. It sees each participant once, as stored at the time it is reached.
func (pl *Panel) Range(fn func(p *Participant, a Activity) bool) {
	var batch []*panelRecord
	for i := range pl.byID {
		is := &pl.byID[i]
		is.mu.RLock()
		batch = batch[:0]
		for _, rec := range is.m {
			batch = append(batch, rec)
		}
		is.mu.RUnlock()
		for _, rec := range batch {
			if !fn(rec.p.Load(), rec.activity.read()) {
				return
			}
		}
	}
}
