package snapshot

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/switchboard/switchboard/engine"
)

// Sink receives what a snapshot holds, value by value, in the order written. A nil func
// skips its kind (still checked). rec is reused from one call to the next.
type Sink struct {
	Campaign    func(c engine.Campaign) error
	Participant func(rec *engine.PanelRecord) error
	LeftOut     func(id int64) error
	// Format 2 (a snapshot of format 1 has none: Header.Format says so).
	QuotaCount    func(id int64, v engine.QuotaCounts) error
	CampaignCount func(id int64, v engine.CampaignCounts) error
	Block         func(b Block) error
}

// Read reads a snapshot from r and hands its values to sink, checking each frame's
// checksum before it decodes the frame; memory beyond what sink keeps is one frame. accept
// is called with the header before any value is read, and refuses the snapshot by
// returning an error (too old, another schema). A snapshot of another format, corrupt or
// truncated is refused with ErrCorrupt, ErrTruncated, ErrNotSnapshot or a *VersionError;
// a refusal can come after sink has received values, which the caller then discards.
func Read(r io.Reader, accept func(Header) error, sink Sink) (Header, Counts, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	h, payload, err := readHead(br, accept)
	if err != nil {
		return h, Counts{}, err
	}
	d := decoder{sink: sink, format: h.Format}
	last := kindHeader
	for {
		var kind byte
		kind, payload, err = readFrame(br, payload[:0])
		if err != nil {
			return h, d.got, err
		}
		if kind < last || kind == kindHeader {
			return h, d.got, fmt.Errorf("%w: frame of kind %d after kind %d", ErrCorrupt, kind, last)
		}
		last = kind
		if kind == kindEnd {
			return h, d.got, d.end(payload)
		}
		if payload, err = d.frame(kind, payload); err != nil {
			return h, d.got, err
		}
	}
}

// readHead reads the magic and the header frame, and checks the header: its format, then
// accept. It returns the header frame's buffer, for the next frame.
func readHead(br *bufio.Reader, accept func(Header) error) (Header, []byte, error) {
	var h Header
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return h, nil, truncated(err)
	}
	if string(magic) != Magic {
		return h, nil, ErrNotSnapshot
	}
	kind, payload, err := readFrame(br, make([]byte, 0, 4096))
	if err != nil {
		return h, nil, err
	}
	if kind != kindHeader {
		return h, nil, fmt.Errorf("%w: no header", ErrCorrupt)
	}
	if h, err = parseHeader(payload); err != nil {
		return h, nil, err
	}
	if h.Format < MinFormatVersion || h.Format > FormatVersion {
		return h, nil, &VersionError{What: "format", Got: h.Format, Want: FormatVersion}
	}
	if accept != nil {
		if err := accept(h); err != nil {
			return h, nil, err
		}
	}
	return h, payload, nil
}

// decoder hands the values of a snapshot's frames to a Sink, counting them.
type decoder struct {
	sink   Sink
	format int // the header's
	got    Counts
	rec    engine.PanelRecord // reused from one panel row to the next
}

// frame decodes the values of one frame of kind and hands them to the sink. It returns the
// payload as consumed, whose room the next frame may take.
func (d *decoder) frame(kind byte, payload []byte) ([]byte, error) {
	switch kind {
	case kindCampaigns:
		return d.campaigns(payload)
	case kindPanel:
		return d.panel(payload)
	case kindLeftOut:
		return d.leftOut(payload)
	}
	if d.format >= countersFormat {
		switch kind {
		case kindQuotaCounts:
			return d.values(payload, &d.got.QuotaCounts, d.quotaCount)
		case kindCampaignCounts:
			return d.values(payload, &d.got.CampaignCounts, d.campaignCount)
		case kindBlocks:
			return d.values(payload, &d.got.Blocks, d.block)
		}
	}
	return payload, fmt.Errorf("%w: unknown frame kind %d", ErrCorrupt, kind)
}

// campaigns decodes a frame of campaigns.
func (d *decoder) campaigns(payload []byte) ([]byte, error) {
	for len(payload) > 0 {
		var c engine.Campaign
		var err error
		if c, payload, err = engine.DecodeCampaign(payload); err != nil {
			return payload, fmt.Errorf("%w: campaign: %v", ErrCorrupt, err)
		}
		d.got.Campaigns++
		if d.sink.Campaign != nil {
			if err := d.sink.Campaign(c); err != nil {
				return payload, err
			}
		}
	}
	return payload, nil
}

// panel decodes a frame of panel rows.
func (d *decoder) panel(payload []byte) ([]byte, error) {
	for len(payload) > 0 {
		var err error
		if payload, err = engine.DecodePanelRecord(payload, &d.rec); err != nil {
			return payload, fmt.Errorf("%w: panel row: %v", ErrCorrupt, err)
		}
		d.got.Participants++
		if d.sink.Participant != nil {
			if err := d.sink.Participant(&d.rec); err != nil {
				return payload, err
			}
		}
	}
	return payload, nil
}

// leftOut decodes a frame of left-out campaign ids.
func (d *decoder) leftOut(payload []byte) ([]byte, error) {
	for len(payload) > 0 {
		id, n := binary.Varint(payload)
		if n <= 0 {
			return payload, fmt.Errorf("%w: left-out id", ErrCorrupt)
		}
		payload = payload[n:]
		d.got.LeftOut++
		if d.sink.LeftOut != nil {
			if err := d.sink.LeftOut(id); err != nil {
				return payload, err
			}
		}
	}
	return payload, nil
}

// values decodes a frame of values one at a time with one, counting them in n.
func (d *decoder) values(payload []byte, n *int64, one func([]byte) ([]byte, error)) ([]byte, error) {
	for len(payload) > 0 {
		var err error
		if payload, err = one(payload); err != nil {
			return payload, err
		}
		*n++
	}
	return payload, nil
}

func (d *decoder) quotaCount(b []byte) ([]byte, error) {
	id, v, b, err := parseQuotaCount(b)
	if err != nil {
		return b, fmt.Errorf("%w: quota counts", ErrCorrupt)
	}
	if d.sink.QuotaCount != nil {
		err = d.sink.QuotaCount(id, v)
	}
	return b, err
}

func (d *decoder) campaignCount(b []byte) ([]byte, error) {
	id, v, b, err := parseCampaignCount(b)
	if err != nil {
		return b, fmt.Errorf("%w: campaign counts", ErrCorrupt)
	}
	if d.sink.CampaignCount != nil {
		err = d.sink.CampaignCount(id, v)
	}
	return b, err
}

func (d *decoder) block(b []byte) ([]byte, error) {
	k, b, err := parseBlock(b)
	if err != nil {
		return b, fmt.Errorf("%w: quality block", ErrCorrupt)
	}
	if d.sink.Block != nil {
		err = d.sink.Block(k)
	}
	return b, err
}

// end checks the end frame: the counts it holds are those read.
func (d *decoder) end(payload []byte) error {
	want, err := parseCounts(payload, d.format)
	if err != nil {
		return err
	}
	if want != d.got {
		return fmt.Errorf("%w: end frame counts %+v, read %+v", ErrCorrupt, want, d.got)
	}
	return nil
}

// readFrame reads one frame into buf (grown as needed, at most MaxFrame) and checks it.
func readFrame(br *bufio.Reader, buf []byte) (byte, []byte, error) {
	var head [frameHead]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return 0, nil, truncated(err)
	}
	kind := head[0]
	n := binary.LittleEndian.Uint32(head[1:5])
	sum := binary.LittleEndian.Uint32(head[5:9])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: frame of %d bytes", ErrCorrupt, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(br, buf); err != nil {
		return 0, nil, truncated(err)
	}
	if checksum(kind, buf) != sum {
		return 0, nil, fmt.Errorf("%w: checksum mismatch in a frame of kind %d", ErrCorrupt, kind)
	}
	return kind, buf, nil
}

// truncated names an early end of the stream as ErrTruncated; other errors (a failed
// read, a peer gone) pass through.
func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}
