package engine

import (
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strings"
)

// Participant is what the engine knows of one respondent when it matches.
// Answers are sorted by QuestionID with texts normalized (NormalizeText), and
// Entries are sorted by CampaignID; Panel.Upsert keeps both in that form.
type Participant struct {
	ID        int64
	CountryID int32
	// PublisherID is the supply partner the participant belongs to (the panel's key):
	// campaigns that exclude that partner never admit it.
	PublisherID int64
	// Device is exactly one Device* bit: the device of the current request.
	Device uint8
	// DeviceID is the X-Device-Identifier the partner sent; may be empty.
	DeviceID string
	// DeviceIDHash is HashDeviceID(DeviceID), computed once (Panel.Upsert
	// does it) so matching never hashes; empty when DeviceID is empty.
	DeviceIDHash string
	Answers      []Answer
	Entries      []Entry
	// Version changes whenever the panel changes the participant, so that
	// a cache can tell whether what it computed from it is still current.
	Version uint32

	// codeBuf and textBuf back the Codes and Texts of answers decoded by
	// the panel into this value (Panel.Lookup), reused from one decode to
	// the next.
	codeBuf []int32
	textBuf []byte
	// row is the panel row this value was decoded from by Lookup or LookupByID, plus one
	// (0: none), so that TouchDecoded need not find it again.
	row uint32
}

// detached returns a copy of p that shares no memory with it: a participant decoded by the
// panel into a reused value (Range, Lookup) is overwritten by the next decode, so whoever
// keeps one past the callback keeps a detached copy.
func (p *Participant) detached() *Participant {
	c := &Participant{ID: p.ID, CountryID: p.CountryID, PublisherID: p.PublisherID, Device: p.Device, Version: p.Version,
		DeviceID: strings.Clone(p.DeviceID), DeviceIDHash: strings.Clone(p.DeviceIDHash),
		Entries: slices.Clone(p.Entries)}
	if len(p.Answers) > 0 {
		c.Answers = make([]Answer, len(p.Answers))
		for i, a := range p.Answers {
			c.Answers[i] = Answer{QuestionID: a.QuestionID, Codes: slices.Clone(a.Codes), Text: strings.Clone(a.Text)}
		}
	}
	return c
}

// Answer is a participant's answer to one question. Select questions and AGE
// (Codes = [age]) use Codes; text questions such as ZIP use Text.
type Answer struct {
	QuestionID int32
	Codes      []int32
	Text       string
}

// Entry records the last time (unix seconds) the participant entered a
// campaign; it drives reentry_interval and campaign relationships.
type Entry struct {
	CampaignID int64
	At         int64
}

// HashDeviceID returns the upper-case hex SHA-1 of the upper-cased device
// identifier, the form of retargeting_type 3 (hashed mobile ad id). It
// returns "" for an empty identifier.
func HashDeviceID(deviceID string) string {
	if deviceID == "" {
		return ""
	}
	sum := sha1.Sum([]byte(strings.ToUpper(deviceID)))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

// lastEntry returns the time of the participant's last entry into campaign
// id, by binary search over the sorted Entries.
func (p *Participant) lastEntry(id int64) (int64, bool) {
	lo, hi := 0, len(p.Entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p.Entries[m].CampaignID < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(p.Entries) && p.Entries[lo].CampaignID == id {
		return p.Entries[lo].At, true
	}
	return 0, false
}
