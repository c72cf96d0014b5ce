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
}

// Read reads a snapshot from r and hands its values to sink, checking each frame's
// checksum before it decodes the frame; memory beyond what sink keeps is one frame. accept
// is called with the header before any value is read, and refuses the snapshot by
// returning an error (too old, another schema). A snapshot of another format, corrupt or
// truncated is refused with ErrCorrupt, ErrTruncated, ErrNotSnapshot or a *VersionError;
// a refusal can come after sink has received values, which the caller then discards.
func Read(r io.Reader, accept func(Header) error, sink Sink) (Header, Counts, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var h Header
	var got Counts
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(br, magic); err != nil {
		return h, got, truncated(err)
	}
	if string(magic) != Magic {
		return h, got, ErrNotSnapshot
	}
	buf := make([]byte, 0, 4096)
	kind, payload, err := readFrame(br, buf)
	if err != nil {
		return h, got, err
	}
	if kind != kindHeader {
		return h, got, fmt.Errorf("%w: no header", ErrCorrupt)
	}
	if h, err = parseHeader(payload); err != nil {
		return h, got, err
	}
	if h.Format != FormatVersion {
		return h, got, &VersionError{What: "format", Got: h.Format, Want: FormatVersion}
	}
	if accept != nil {
		if err := accept(h); err != nil {
			return h, got, err
		}
	}
	var rec engine.PanelRecord
	last := kindHeader
	for {
		kind, payload, err = readFrame(br, payload[:0])
		if err != nil {
			return h, got, err
		}
		if kind < last || kind == kindHeader {
			return h, got, fmt.Errorf("%w: frame of kind %d after kind %d", ErrCorrupt, kind, last)
		}
		last = kind
		switch kind {
		case kindCampaigns:
			for len(payload) > 0 {
				var c engine.Campaign
				if c, payload, err = engine.DecodeCampaign(payload); err != nil {
					return h, got, fmt.Errorf("%w: campaign: %v", ErrCorrupt, err)
				}
				got.Campaigns++
				if sink.Campaign != nil {
					if err := sink.Campaign(c); err != nil {
						return h, got, err
					}
				}
			}
		case kindPanel:
			for len(payload) > 0 {
				if payload, err = engine.DecodePanelRecord(payload, &rec); err != nil {
					return h, got, fmt.Errorf("%w: panel row: %v", ErrCorrupt, err)
				}
				got.Participants++
				if sink.Participant != nil {
					if err := sink.Participant(&rec); err != nil {
						return h, got, err
					}
				}
			}
		case kindLeftOut:
			for len(payload) > 0 {
				id, n := binary.Varint(payload)
				if n <= 0 {
					return h, got, fmt.Errorf("%w: left-out id", ErrCorrupt)
				}
				payload = payload[n:]
				got.LeftOut++
				if sink.LeftOut != nil {
					if err := sink.LeftOut(id); err != nil {
						return h, got, err
					}
				}
			}
		case kindEnd:
			want, err := parseCounts(payload)
			if err != nil {
				return h, got, err
			}
			if want != got {
				return h, got, fmt.Errorf("%w: end frame counts %+v, read %+v", ErrCorrupt, want, got)
			}
			return h, got, nil
		default:
			return h, got, fmt.Errorf("%w: unknown frame kind %d", ErrCorrupt, kind)
		}
	}
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
