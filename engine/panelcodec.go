package engine

import (
	"encoding/binary"
	"encoding/hex"
	"slices"
	"unsafe"
)

// The codec of a row: answers packed into bytes for the arena and decoded
// back into a caller's Participant, reusing its buffers, so that a read of
// the panel allocates nothing once the Participant has grown.

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
