package snapshot_test

import (
	"bytes"
	"errors"
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
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	const n = 10_000 // the panel rows take about three frames
	b := write(t, n)
	var camps, rows int
	var left []int64
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
	})
	if err != nil {
		t.Fatal(err)
	}
	want := testHeader
	want.Format = snapshot.FormatVersion
	if h != want || camps != n || rows != n || !reflect.DeepEqual(left, []int64{5, 6, 7}) ||
		counts != (snapshot.Counts{Campaigns: n, Participants: n, LeftOut: 3}) {
		t.Fatalf("read %+v %+v: %d campaigns, %d rows, left out %v", h, counts, camps, rows, left)
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
	f.Fuzz(func(t *testing.T, b []byte) {
		snapshot.Read(bytes.NewReader(b), nil, snapshot.Sink{
			Campaign:    func(engine.Campaign) error { return nil },
			Participant: func(*engine.PanelRecord) error { return nil },
			LeftOut:     func(int64) error { return nil },
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
