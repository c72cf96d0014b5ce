package engine

import (
	"encoding/binary"
	"errors"
	"math"
)

// The binary form of campaigns and panel rows that a process snapshot carries (a process
// started from one holds the engine input and the panel without reading them from the
// database). Integers are varints, strings and lists length-prefixed; decoding checks every
// length against the bytes left, so that any input decodes or fails, never panics.

// ErrCodec is returned by the decoders for bytes that are not a value's binary form.
var ErrCodec = errors.New("engine: malformed binary value")

// AppendCampaign appends the binary form of c to b.
func AppendCampaign(b []byte, c *Campaign) []byte {
	b = binary.AppendVarint(b, c.ID)
	b = binary.AppendVarint(b, c.BuyerID)
	b = binary.AppendVarint(b, int64(c.CountryID))
	b = binary.AppendVarint(b, int64(c.Status))
	b = binary.AppendVarint(b, c.CPICents)
	b = binary.AppendVarint(b, int64(c.LOI))
	b = binary.AppendVarint(b, int64(c.Incidence))
	b = append(b, c.Devices)
	b = binary.AppendVarint(b, int64(c.MaxDailyCompletes))
	b = binary.AppendVarint(b, int64(c.ReentryMinutes))
	b = binary.AppendVarint(b, int64(c.DaysInField))
	b = binary.AppendVarint(b, c.FieldStart)
	b = binary.AppendUvarint(b, uint64(len(c.Quotas)))
	for i := range c.Quotas {
		q := &c.Quotas[i]
		b = binary.AppendVarint(b, q.ID)
		b = binary.AppendVarint(b, int64(q.NumRespondents))
		b = append(b, boolByte(q.ClickBalanced)|boolByte(q.Global)<<1)
		b = binary.AppendUvarint(b, uint64(len(q.Conditions)))
		for j := range q.Conditions {
			cond := &q.Conditions[j]
			b = binary.AppendVarint(b, int64(cond.QuestionID))
			b = appendInt32s(b, cond.Codes)
			packed := cond.packed
			if packed == "" && len(cond.Texts) > 0 {
				packed = packTexts(cond.Texts)
			}
			b = binary.AppendUvarint(b, uint64(len(packed)))
			b = append(b, packed...)
		}
	}
	b = appendInt64s(b, c.Related)
	b = binary.AppendUvarint(b, uint64(len(c.Retargets)))
	for _, r := range c.Retargets {
		b = append(b, r.Kind)
		b = binary.AppendVarint(b, r.ParticipantID)
		b = appendString(b, r.Value)
		b = binary.AppendVarint(b, r.ExpiresAt)
	}
	b = appendInt64s(b, c.ExcludedParticipants)
	return appendInt64s(b, c.ExcludedSuppliers)
}

// DecodeCampaign decodes the campaign at the front of b (AppendCampaign) and returns the
// bytes after it. Its conditions' texts are held packed, as a snapshot holds them.
func DecodeCampaign(b []byte) (Campaign, []byte, error) {
	d := decoder{b: b}
	var c Campaign
	c.ID = d.varint()
	c.BuyerID = d.varint()
	c.CountryID = d.int32()
	c.Status = d.int()
	c.CPICents = d.varint()
	c.LOI = d.int()
	c.Incidence = d.int()
	c.Devices = d.byte()
	c.MaxDailyCompletes = d.int()
	c.ReentryMinutes = d.int()
	c.DaysInField = d.int()
	c.FieldStart = d.varint()
	if n := d.count(3); n > 0 {
		c.Quotas = make([]Quota, n)
		for i := range c.Quotas {
			q := &c.Quotas[i]
			q.ID = d.varint()
			q.NumRespondents = d.int()
			flags := d.byte()
			q.ClickBalanced, q.Global = flags&1 != 0, flags&2 != 0
			if m := d.count(3); m > 0 {
				q.Conditions = make([]Condition, m)
				for j := range q.Conditions {
					cond := &q.Conditions[j]
					cond.QuestionID = d.int32()
					cond.Codes = d.int32s()
					cond.packed = string(d.bytes())
					if !validPacked(cond.packed) {
						d.fail()
					}
				}
			}
		}
	}
	c.Related = d.int64s()
	if n := d.count(4); n > 0 {
		c.Retargets = make([]Retarget, n)
		for i := range c.Retargets {
			r := &c.Retargets[i]
			r.Kind = d.byte()
			r.ParticipantID = d.varint()
			r.Value = string(d.bytes())
			r.ExpiresAt = d.varint()
		}
	}
	c.ExcludedParticipants = d.int64s()
	c.ExcludedSuppliers = d.int64s()
	if d.err != nil {
		return Campaign{}, b, d.err
	}
	return c, d.b, nil
}

// validPacked reports whether s is a packed text list: uvarint lengths each followed by as
// many bytes, up to its end.
func validPacked(s string) bool {
	for len(s) > 0 {
		n, k := stringUvarint(s)
		if k <= 0 || uint64(len(s)-k) < n {
			return false
		}
		s = s[k+int(n):]
	}
	return true
}

// RangeCampaigns calls fn with the definition of every campaign the snapshot indexes, until
// fn returns false. fn must not modify it.
func (s *Snapshot) RangeCampaigns(fn func(c *Campaign) bool) {
	for _, part := range s.parts {
		for _, c := range part.defs(nil) {
			if !fn(c) {
				return
			}
		}
	}
}

// PanelRecord is one panel row as a process snapshot carries it: the key, the participant
// with its answers and entry history, and its activity.
type PanelRecord struct {
	User string
	Participant
	Activity Activity
}

// RangeRecords calls fn with every row of the panel, as stored when it is reached, until fn
// returns false. rec is reused from one call to the next: fn must not keep it. No lock is
// held while fn runs.
func (pl *Panel) RangeRecords(fn func(rec *PanelRecord) bool) {
	var rec PanelRecord
	var user []byte
	pl.rangeRows(func(s *panelShard, r uint32) {
		s.decode(r, &rec.Participant)
		user = append(user[:0], s.record(r).user...)
		rec.Activity = readActivity(&s.act[r])
	}, func() bool {
		rec.User = string(user)
		return fn(&rec)
	})
}

// Restore stores rec as Put would, with its activity exactly as recorded (the active days
// too, which Put's one instant of activity would not carry).
func (pl *Panel) Restore(rec *PanelRecord) error {
	if err := pl.upsert(rec.PublisherID, rec.User, &rec.Participant, 0, nil); err != nil {
		return err
	}
	ref, ok := pl.byID(rec.ID)
	if !ok {
		return nil
	}
	s, r := &pl.shards[ref>>rowBits], ref&(1<<rowBits-1)
	w := uint64(0)
	if rec.Activity.LastActive > 0 {
		w = uint64(uint32(min(rec.Activity.LastActive, math.MaxUint32)))<<32 | uint64(rec.Activity.Days)
	}
	s.mu.Lock()
	old := s.act[r]
	if w>>32 >= old>>32 { // a later activity recorded meanwhile stays
		s.act[r] = w
	}
	s.mu.Unlock()
	return nil
}

// AppendPanelRecord appends the binary form of rec to b.
func AppendPanelRecord(b []byte, rec *PanelRecord) []byte {
	p := &rec.Participant
	b = binary.AppendVarint(b, p.ID)
	b = binary.AppendVarint(b, p.PublisherID)
	b = appendString(b, rec.User)
	b = binary.AppendVarint(b, int64(p.CountryID))
	b = append(b, p.Device)
	b = appendString(b, p.DeviceID)
	b = binary.AppendUvarint(b, uint64(len(p.Answers)))
	for _, a := range p.Answers {
		b = binary.AppendVarint(b, int64(a.QuestionID))
		b = appendInt32s(b, a.Codes)
		b = appendString(b, a.Text)
	}
	b = binary.AppendUvarint(b, uint64(len(p.Entries)))
	for _, e := range p.Entries {
		b = binary.AppendVarint(b, e.CampaignID)
		b = binary.AppendVarint(b, e.At)
	}
	b = binary.AppendVarint(b, rec.Activity.LastActive)
	return binary.AppendUvarint(b, uint64(rec.Activity.Days))
}

// DecodePanelRecord decodes the panel row at the front of b (AppendPanelRecord) into rec,
// reusing its slices, and returns the bytes after it.
func DecodePanelRecord(b []byte, rec *PanelRecord) ([]byte, error) {
	d := decoder{b: b}
	p := &rec.Participant
	p.ID = d.varint()
	p.PublisherID = d.varint()
	rec.User = string(d.bytes())
	p.CountryID = d.int32()
	p.Device = d.byte()
	p.DeviceID = string(d.bytes())
	p.DeviceIDHash = ""
	p.Answers = p.Answers[:0]
	for n := d.count(3); n > 0; n-- {
		var a Answer
		a.QuestionID = d.int32()
		a.Codes = d.int32s()
		a.Text = string(d.bytes())
		p.Answers = append(p.Answers, a)
	}
	p.Entries = p.Entries[:0]
	for n := d.count(2); n > 0; n-- {
		p.Entries = append(p.Entries, Entry{CampaignID: d.varint(), At: d.varint()})
	}
	rec.Activity.LastActive = d.varint()
	days := d.uvarint()
	if days > math.MaxUint32 {
		d.fail()
	}
	rec.Activity.Days = uint32(days)
	rec.Activity.Day = utcDay(rec.Activity.LastActive)
	if d.err != nil {
		return b, d.err
	}
	return d.b, nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendInt32s(b []byte, vs []int32) []byte {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = binary.AppendVarint(b, int64(v))
	}
	return b
}

func appendInt64s(b []byte, vs []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// decoder reads varints and length-prefixed values from b; the first malformed one sets err
// and every read after it returns zero.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = ErrCodec
	}
	d.b = nil
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail()
		return 0
	}
	return int32(v)
}

func (d *decoder) int() int {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail()
		return 0
	}
	return int(v)
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// count reads a list length whose every element takes at least min bytes: a length the
// bytes left cannot hold fails, so that no input allocates more than its size allows.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/minSize) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) int32s() []int32 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	vs := make([]int32, n)
	for i := range vs {
		vs[i] = d.int32()
	}
	return vs
}

func (d *decoder) int64s() []int64 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	vs := make([]int64, n)
	for i := range vs {
		vs[i] = d.varint()
	}
	return vs
}
