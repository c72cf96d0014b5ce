package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/engine/snapshot"
	"github.com/switchboard/switchboard/engine/synth"
)

var testHeader = snapshot.Header{Schema: 56, Position: snapshot.Position{XID: 1234, SessionID: 99, At: time.Unix(1_765_000_000, 5).UTC()},
	Written: time.Unix(1_765_000_010, 0).UTC()}

// write writes n campaigns, n panel rows and 3 left-out ids, rows large enough that the
// panel spans several frames.
func write(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := snapshot.NewWriter(&b, testHeader)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		c := engine.Campaign{ID: int64(i + 1), Status: engine.StatusActive, CountryID: 1,
			Quotas: []engine.Quota{{ID: int64(i + 1), NumRespondents: 10, Conditions: []engine.Condition{{QuestionID: 45, Texts: []string{"10001", "10002"}}}}}}
		if err := w.Campaign(&c); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		rec := engine.PanelRecord{User: "user-" + strconv.Itoa(i), Participant: engine.Participant{ID: int64(i + 1), PublisherID: 1,
			Answers: []engine.Answer{{QuestionID: 42, Codes: []int32{int32(i % 80)}}, {QuestionID: 45, Text: string(bytes.Repeat([]byte("z"), 200))}},
			Entries: []engine.Entry{{CampaignID: int64(i%n + 1), At: 1_765_000_000}}}, Activity: engine.Activity{LastActive: 1_765_000_000, Days: 3}}
		if err := w.Participant(&rec); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{5, 6, 7} {
		if err := w.LeftOut(id); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if err := w.QuotaCount(int64(i+1), testQuota(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if err := w.CampaignCount(int64(i+1), testCampaign(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range testBlocks {
		if err := w.Block(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testQuota(i int) engine.QuotaCounts {
	return engine.QuotaCounts{Completes: int64(i % 7), InProgress: int64(i%3) - 1, Entries: int64(i)}
}

func testCampaign(i int) engine.CampaignCounts {
	return engine.CampaignCounts{Day: 20_430, DayCompletes: int64(i % 5), Sessions: int64(2 * i), Completes: int64(i)}
}

var testBlocks = []snapshot.Block{
	{ParticipantID: 9, PublisherID: 1, User: "user-8", Class: "fraud", BlockedAt: 1_765_000_000, Until: 1_767_592_000},
	{ParticipantID: 12, PublisherID: 2, User: "ü", Class: "low_quality", BlockedAt: 1_765_000_100, Until: 1_765_000_200},
}

func TestRoundTrip(t *testing.T) {
	const n = 10_000 // the panel rows take about three frames
	b := write(t, n)
	var camps, rows, quotas, campaignCounts int
	var left []int64
	var blocks []snapshot.Block
	h, counts, err := snapshot.Read(bytes.NewReader(b), nil, snapshot.Sink{
		Campaign: func(c engine.Campaign) error { camps++; return nil },
		Participant: func(rec *engine.PanelRecord) error {
			if rec.User != "user-"+strconv.Itoa(rows) || rec.Activity.Days != 3 {
				t.Fatalf("row %d: %+v", rows, rec)
			}
			rows++
			return nil
		},
		LeftOut: func(id int64) error { left = append(left, id); return nil },
		QuotaCount: func(id int64, v engine.QuotaCounts) error {
			if v != testQuota(int(id-1)) {
				t.Fatalf("quota %d: %+v", id, v)
			}
			quotas++
			return nil
		},
		CampaignCount: func(id int64, v engine.CampaignCounts) error {
			if v != testCampaign(int(id-1)) {
				t.Fatalf("campaign %d: %+v", id, v)
			}
			campaignCounts++
			return nil
		},
		Block: func(k snapshot.Block) error { blocks = append(blocks, k); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := testHeader
	want.Format = snapshot.FormatVersion
	if h != want || camps != n || rows != n || !reflect.DeepEqual(left, []int64{5, 6, 7}) ||
		quotas != n || campaignCounts != n || !reflect.DeepEqual(blocks, testBlocks) ||
		counts != (snapshot.Counts{Campaigns: n, Participants: n, LeftOut: 3, QuotaCounts: n, CampaignCounts: n, Blocks: 2}) {
		t.Fatalf("read %+v %+v: %d campaigns, %d rows, left out %v, %d quota and %d campaign counts, blocks %+v",
			h, counts, camps, rows, left, quotas, campaignCounts, blocks)
	}
	if len(b) > n*300 {
		t.Fatalf("%d bytes for %d campaigns and rows", len(b), n)
	}
}

// TestRefusals: every truncation, a flipped bit anywhere, another format or schema: the
// snapshot is refused with an error that says which.
func TestRefusals(t *testing.T) {
	b := write(t, 50)
	read := func(b []byte, accept func(snapshot.Header) error) error {
		_, _, err := snapshot.Read(bytes.NewReader(b), accept, snapshot.Sink{})
		return err
	}
	if err := read(b, nil); err != nil {
		t.Fatal(err)
	}
	for cut := 0; cut < len(b); cut += 1 + cut/16 {
		if err := read(b[:cut], nil); !errors.Is(err, snapshot.ErrTruncated) && !errors.Is(err, snapshot.ErrNotSnapshot) {
			t.Fatalf("cut at %d of %d: %v", cut, len(b), err)
		}
	}
	for i := len(snapshot.Magic); i < len(b); i += 7 {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if err := read(c, nil); err == nil {
			t.Fatalf("bit flipped at %d: read", i)
		}
	}
	schema := errors.New("other schema")
	if err := read(b, func(h snapshot.Header) error { return schema }); err != schema {
		t.Fatalf("refused by accept: %v", err)
	}
	if err := read([]byte("SWBSNAQ\x00"), nil); !errors.Is(err, snapshot.ErrNotSnapshot) {
		t.Fatalf("bad magic: %v", err)
	}
}

// frame is one frame's bytes, as a writer of any format writes it.
func frame(kind byte, payload []byte) []byte {
	b := []byte{kind}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	sum := crc32.Update(crc32.Update(0, crc32.MakeTable(crc32.Castagnoli), []byte{kind}), crc32.MakeTable(crc32.Castagnoli), payload)
	b = binary.LittleEndian.AppendUint32(b, sum)
	return append(b, payload...)
}

// formatOne is a snapshot of format 1 (no counters, no blocks): one left-out id, as the
// release before this one writes it.
func formatOne(format int, end []byte, more ...[]byte) []byte {
	var h []byte
	for _, v := range []uint64{uint64(format), 56, 1234} {
		h = binary.AppendUvarint(h, v)
	}
	for _, v := range []int64{99, 1_765_000_000, 1_765_000_010} {
		h = binary.AppendVarint(h, v)
	}
	b := append([]byte(snapshot.Magic), frame(1, h)...)
	b = append(b, frame(4, binary.AppendVarint(nil, 7))...)
	for _, f := range more {
		b = append(b, f...)
	}
	return append(b, frame(0xff, end)...)
}

// TestFormatOne: a snapshot of format 1 is read, without counters or blocks, and its header
// says format 1 (its reader loads those from the database); frames of format 2 in it, or a
// format-2 end frame, are refused; a format this reader does not know is refused before any
// value with a *VersionError, as a format-1 reader refuses this package's snapshots.
func TestFormatOne(t *testing.T) {
	var left []int64
	sink := snapshot.Sink{LeftOut: func(id int64) error { left = append(left, id); return nil },
		QuotaCount: func(int64, engine.QuotaCounts) error { t.Fatal("a quota count in format 1"); return nil }}
	h, counts, err := snapshot.Read(bytes.NewReader(formatOne(1, []byte{0, 0, 1})), nil, sink)
	if err != nil || h.Format != 1 || counts != (snapshot.Counts{LeftOut: 1}) || !reflect.DeepEqual(left, []int64{7}) {
		t.Fatalf("format 1: %+v %+v %v %v", h, counts, left, err)
	}
	quota := frame(5, []byte{2, 0, 0, 0})
	if _, _, err := snapshot.Read(bytes.NewReader(formatOne(1, []byte{0, 0, 1, 1, 0, 0}, quota)), nil, sink); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("format 1 with a quota count frame: %v", err)
	}
	if _, _, err := snapshot.Read(bytes.NewReader(formatOne(1, []byte{0, 0, 1, 0, 0, 0})), nil, sink); !errors.Is(err, snapshot.ErrCorrupt) {
		t.Fatalf("format 1 with a format-2 end frame: %v", err)
	}
	var ve *snapshot.VersionError
	if _, _, err := snapshot.Read(bytes.NewReader(formatOne(snapshot.FormatVersion+1, []byte{0, 0, 1, 0, 0, 0})), nil, sink); !errors.As(err, &ve) || ve.What != "format" {
		t.Fatalf("a newer format: %v", err)
	}
	if h, _, _ := snapshot.Read(bytes.NewReader(write(t, 1)), nil, snapshot.Sink{}); h.Format == 1 {
		t.Fatal("this package writes format 1: a format-1 reader would read it without its counters")
	}
}

// TestWriteFileAtomic: a failed write leaves the previous snapshot in place and no
// temporary file behind.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	if _, err := snapshot.WriteFile(dir, testHeader, func(w *snapshot.Writer) error { return w.LeftOut(1) }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := snapshot.WriteFile(dir, testHeader, func(w *snapshot.Writer) error { w.LeftOut(2); return boom }); err != boom {
		t.Fatal(err)
	}
	f, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var left []int64
	if _, _, err := snapshot.Read(f, nil, snapshot.Sink{LeftOut: func(id int64) error { left = append(left, id); return nil }}); err != nil || !reflect.DeepEqual(left, []int64{1}) {
		t.Fatalf("%v %v", left, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(m) != 0 {
		t.Fatalf("left behind: %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, snapshot.FileName)); err != nil {
		t.Fatal(err)
	}
}

// FuzzRead: any bytes are read or refused; none panics, and none makes the reader allocate
// beyond one frame.
func FuzzRead(f *testing.F) {
	f.Add(write(f, 3))
	f.Add([]byte(snapshot.Magic))
	f.Add(formatOne(1, []byte{0, 0, 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		snapshot.Read(bytes.NewReader(b), nil, snapshot.Sink{
			Campaign:      func(engine.Campaign) error { return nil },
			Participant:   func(*engine.PanelRecord) error { return nil },
			LeftOut:       func(int64) error { return nil },
			QuotaCount:    func(int64, engine.QuotaCounts) error { return nil },
			CampaignCount: func(int64, engine.CampaignCounts) error { return nil },
			Block:         func(snapshot.Block) error { return nil },
		})
	})
}

// BenchmarkPanelRoundTrip writes a synthetic panel of 100,000 participants with a month of
// entries and restores it into an empty panel: the bytes per participant and the time per
// participant of a process's start from a snapshot.
func BenchmarkPanelRoundTrip(b *testing.B) {
	const n = 100_000
	src := engine.NewPanel()
	for i, p := range synth.Participants(n, 1, 10_000) {
		if err := src.Put(1+int64(i%3), "user-"+strconv.Itoa(i), p, 1_765_000_000-int64(i%30)*86400); err != nil {
			b.Fatal(err)
		}
	}
	var buf bytes.Buffer
	b.ResetTimer()
	for range b.N {
		buf.Reset()
		w, err := snapshot.NewWriter(&buf, testHeader)
		if err != nil {
			b.Fatal(err)
		}
		src.RangeRecords(func(rec *engine.PanelRecord) bool { return w.Participant(rec) == nil })
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		dst := engine.NewPanel()
		dst.Reserve(n)
		if _, _, err := snapshot.Read(bytes.NewReader(buf.Bytes()), nil, snapshot.Sink{Participant: dst.Restore}); err != nil || dst.Len() != n {
			b.Fatal(err, dst.Len())
		}
	}
	b.ReportMetric(float64(buf.Len())/n, "B/participant")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/participant")
}
