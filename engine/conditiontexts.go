package engine

import (
	"encoding/binary"
	"iter"
	"slices"
)

// The text values of a condition (ZIP codes, cities) are most of an index's memory at
// market scale: at 100,000 campaigns about 9 million values, each a 16-byte string header
// in a []string and its bytes. A snapshot keeps its own copy of each campaign whose
// conditions hold them packed in one string per condition (uvarint length, then the
// normalized text, per value): 6 to 7 bytes for a ZIP code instead of 21 and more.

// textValues yields the condition's text values: Texts as given, or, in a snapshot's copy,
// the packed values (normalized).
func (c *Condition) textValues() iter.Seq[string] {
	return func(yield func(string) bool) {
		if c.packed == "" {
			for _, t := range c.Texts {
				if !yield(t) {
					return
				}
			}
			return
		}
		for s := c.packed; len(s) > 0; {
			n, k := stringUvarint(s)
			if k <= 0 || uint64(len(s)-k) < n {
				return
			}
			if !yield(s[k : k+int(n)]) {
				return
			}
			s = s[k+int(n):]
		}
	}
}

// textCount returns how many text values the condition has (as many as textValues yields).
func (c *Condition) textCount() int {
	if c.packed == "" {
		return len(c.Texts)
	}
	n := 0
	for range c.textValues() {
		n++
	}
	return n
}

// hasTexts reports whether the condition has text values.
func (c *Condition) hasTexts() bool { return len(c.Texts) > 0 || c.packed != "" }

// packTexts returns the packed form of texts, normalized.
func packTexts[T string | []byte](texts []T) string {
	n := 0
	for _, t := range texts {
		n += len(t) + binary.MaxVarintLen64
	}
	b := make([]byte, 0, n)
	for _, t := range texts {
		if isNormalized(string(t)) { // no copy: the conversion does not escape
			b = binary.AppendUvarint(b, uint64(len(t)))
			b = append(b, t...)
			continue
		}
		u := NormalizeText(string(t))
		b = binary.AppendUvarint(b, uint64(len(u)))
		b = append(b, u...)
	}
	return string(b)
}

// PackTexts sets the condition's text values to texts (normalized as by NormalizeText),
// held packed as a snapshot holds them, with Texts nil. It is for a feed reading a whole
// market: the values go from its read buffer to their packed form, without the string
// header per value that Texts costs (at 100,000 campaigns about 9 million values, 140 MB
// of headers alive while a load lasts). The condition reads as if Texts held them.
func (c *Condition) PackTexts(texts [][]byte) {
	c.Texts, c.packed = nil, ""
	if len(texts) > 0 {
		c.packed = packTexts(texts)
	}
}

// ownCampaign returns the snapshot's copy of c: its quotas and conditions are its own when
// a condition has text values, which the copy holds packed (the caller's campaign is left
// as it was). A copy even without texts lets the snapshot hold none of the caller's memory
// but what the copy shares: a pointer into the caller's slice would keep all of it, with
// every campaign's unpacked texts.
func ownCampaign(c *Campaign) Campaign {
	own := *c
	texts := false
	for i := range c.Quotas {
		for j := range c.Quotas[i].Conditions {
			texts = texts || len(c.Quotas[i].Conditions[j].Texts) > 0
		}
	}
	if !texts {
		return own
	}
	own.Quotas = make([]Quota, len(c.Quotas))
	for i, q := range c.Quotas {
		conds := make([]Condition, len(q.Conditions))
		for j, cond := range q.Conditions {
			if len(cond.Texts) > 0 {
				cond.packed, cond.Texts = packTexts(cond.Texts), nil
			}
			conds[j] = cond
		}
		q.Conditions = conds
		own.Quotas[i] = q
	}
	return own
}

// unpackedCampaign returns c with its texts as a []string per condition again: c itself when
// it holds none packed, else a copy.
func unpackedCampaign(c *Campaign) *Campaign {
	packed := false
	for i := range c.Quotas {
		for j := range c.Quotas[i].Conditions {
			packed = packed || c.Quotas[i].Conditions[j].packed != ""
		}
	}
	if !packed {
		return c
	}
	out := *c
	out.Quotas = make([]Quota, len(c.Quotas))
	for i, q := range c.Quotas {
		conds := make([]Condition, len(q.Conditions))
		for j, cond := range q.Conditions {
			if cond.packed != "" {
				cond.Texts, cond.packed = slices.Collect(cond.textValues()), ""
			}
			conds[j] = cond
		}
		q.Conditions = conds
		out.Quotas[i] = q
	}
	return &out
}

// stringUvarint is binary.Uvarint over a string.
func stringUvarint(s string) (uint64, int) {
	var x uint64
	for i := 0; i < len(s) && i < binary.MaxVarintLen64; i++ {
		b := s[i]
		if b < 0x80 {
			return x | uint64(b)<<(7*i), i + 1
		}
		x |= uint64(b&0x7f) << (7 * i)
	}
	return 0, 0
}
