package snapshot

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/switchboard/switchboard/engine"
)

// Writer writes one snapshot to an io.Writer: the header at once, then campaigns, panel
// rows, left-out ids, quota counts, campaign counts and blocks in that order (each kind after the one before it is done), in
// frames of at most MaxFrame bytes, and the end frame at Close. The first write error is
// kept and returned by every later call.
type Writer struct {
	w      io.Writer
	kind   byte   // kind of the frame being filled
	buf    []byte // its payload
	frame  []byte // a frame's bytes as written
	counts Counts
	err    error
}

// NewWriter writes the magic and the header h (its Format is set here) to w.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Format = FormatVersion
	sw := &Writer{w: w, buf: make([]byte, 0, MaxFrame), frame: make([]byte, 0, MaxFrame+frameHead)}
	if _, err := io.WriteString(w, Magic); err != nil {
		return nil, err
	}
	sw.writeFrame(kindHeader, appendHeader(nil, h))
	return sw, sw.err
}

// errOrder is a value written after a later kind.
var errOrder = errors.New("snapshot: values written out of order")

// add appends one value of kind to the frame being filled, flushing it first when the kind
// changes or the value would not fit.
func (w *Writer) add(kind byte, appendValue func([]byte) []byte) error {
	if w.err != nil {
		return w.err
	}
	if kind < w.kind {
		w.err = errOrder
		return w.err
	}
	mark := len(w.buf)
	if kind != w.kind {
		w.flush()
		w.kind, mark = kind, 0
	}
	w.buf = appendValue(w.buf)
	if len(w.buf) > MaxFrame {
		if mark == 0 {
			w.err = errors.New("snapshot: one value larger than a frame")
			return w.err
		}
		v := append([]byte(nil), w.buf[mark:]...)
		w.buf = w.buf[:mark]
		w.flush()
		w.buf = append(w.buf, v...)
	}
	return w.err
}

func (w *Writer) flush() {
	if len(w.buf) > 0 {
		w.writeFrame(w.kind, w.buf)
	}
	w.buf = w.buf[:0]
}

func (w *Writer) writeFrame(kind byte, payload []byte) {
	if w.err != nil {
		return
	}
	f := append(w.frame[:0], kind)
	f = binary.LittleEndian.AppendUint32(f, uint32(len(payload)))
	f = binary.LittleEndian.AppendUint32(f, checksum(kind, payload))
	f = append(f, payload...)
	w.frame = f[:0]
	_, w.err = w.w.Write(f)
}

// Campaign adds a campaign of the engine input.
func (w *Writer) Campaign(c *engine.Campaign) error {
	w.counts.Campaigns++
	return w.add(kindCampaigns, func(b []byte) []byte { return engine.AppendCampaign(b, c) })
}

// Participant adds a panel row.
func (w *Writer) Participant(rec *engine.PanelRecord) error {
	w.counts.Participants++
	return w.add(kindPanel, func(b []byte) []byte { return engine.AppendPanelRecord(b, rec) })
}

// LeftOut adds a campaign whose entries the panel's history leaves out (supply's entry
// history follows them).
func (w *Writer) LeftOut(id int64) error {
	w.counts.LeftOut++
	return w.add(kindLeftOut, func(b []byte) []byte { return binary.AppendVarint(b, id) })
}

// QuotaCount adds the counters of a quota.
func (w *Writer) QuotaCount(id int64, v engine.QuotaCounts) error {
	w.counts.QuotaCounts++
	return w.add(kindQuotaCounts, func(b []byte) []byte { return appendQuotaCount(b, id, v) })
}

// CampaignCount adds the counters of a campaign.
func (w *Writer) CampaignCount(id int64, v engine.CampaignCounts) error {
	w.counts.CampaignCounts++
	return w.add(kindCampaignCounts, func(b []byte) []byte { return appendCampaignCount(b, id, v) })
}

// Block adds a participant's latest quality block.
func (w *Writer) Block(k Block) error {
	w.counts.Blocks++
	return w.add(kindBlocks, func(b []byte) []byte { return appendBlock(b, k) })
}

// Close writes the last frame and the end frame. It does not close the io.Writer.
func (w *Writer) Close() error {
	w.flush()
	w.writeFrame(kindEnd, appendCounts(nil, w.counts))
	return w.err
}

// Counts returns how many values were added so far.
func (w *Writer) Counts() Counts { return w.counts }
