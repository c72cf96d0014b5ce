package admin_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestExportTiming streams a campaign of many results (1,000,000 by default) through both
// CSV exports over real HTTP and reports time and the memory growth of the process (server
// and client are both in it). It needs SWITCHBOARD_EXPORT_TIMING=1 (make test skips it);
// SWITCHBOARD_EXPORT_ROWS changes the number of rows.
//
//	SWITCHBOARD_EXPORT_TIMING=1 go test ./admin -run TestExportTiming -v -count=1
func TestExportTiming(t *testing.T) {
	if os.Getenv("SWITCHBOARD_EXPORT_TIMING") == "" || testing.Short() {
		t.Skip("set SWITCHBOARD_EXPORT_TIMING=1 to stream a 1,000,000-row export")
	}
	n := exportRows(t)
	s := apptest.Start(t, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(t)
	c := publish(t, b, newCampaign(t, b, nil))
	var cq struct {
		QuestionID int `json:"question_id"`
	}
	b.Do(t, "POST", "/api/v1/custom_qualifications", map[string]any{"question_text": "Coffee, or \"tea\"?",
		"answer_type": 0, "country_language_id": 1}).Expect(t, 201).Decode(t, &cq)
	for _, a := range []string{"Coffee, black", "Tea 🍵"} {
		b.Do(t, "POST", path("/api/v1/custom_qualifications/%d/custom_qualification_answers", cq.QuestionID),
			map[string]any{"option_text": a}).Expect(t, 201)
	}
	b.Do(t, "POST", path("/api/v1/campaigns/%d/campaign_qualifications", c.ID),
		map[string]any{"question_id": cq.QuestionID, "pre_code_values": "1"}).Expect(t, 201)

	// Seed: n participants with 9 answers each, one complete session each (every 20th
	// rejected), a screener answer for each.
	start := time.Now()
	ctx := context.Background()
	pub := publisher(t, s)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO participants (publisher_id, user_identifier, country_id, profile)
			SELECT $1, 'load-' || g, 1, jsonb_build_object(
				'42', jsonb_build_array(16 + g % 60), '43', jsonb_build_array(1 + g % 2),
				'45', jsonb_build_array(lpad((g % 99999)::text, 5, '0')), '100', jsonb_build_array(1 + g % 4),
				'47', jsonb_build_array(1 + g % 5), '101', jsonb_build_array(1 + g % 8),
				'102', jsonb_build_array(1 + g % 6), '108', jsonb_build_array(1 + g % 3),
				'110', jsonb_build_array(1 + g % 10, 1 + (g + 3) % 10))
			FROM generate_series(1, $2::int) g`, []any{pub, n}},
		{`INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, participant_id, respondent_id,
				entered_at, outcome, outcome_at, rejected)
			SELECT 'load-' || p.id, $1, $2, p.publisher_id, p.id, 'R' || p.id,
				now() - (p.id || ' seconds')::interval, 'complete', now(), p.id % 20 = 0
			FROM participants p WHERE p.user_identifier LIKE 'load-%' ORDER BY p.id`, []any{c.ID, b.ID}},
		{`INSERT INTO screener_answers (session_id, question_id, pre_codes)
			SELECT id, $2, ARRAY[1 + id % 2] FROM sessions WHERE campaign_id = $1`, []any{c.ID, cq.QuestionID}},
		{`ANALYZE participants, sessions, screener_answers`, nil},
	} {
		st := time.Now()
		if _, err := s.DB.Pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: %.60s", time.Since(st).Round(time.Millisecond), strings.Join(strings.Fields(q.sql), " "))
	}
	t.Logf("seeded %d results in %v", n, time.Since(start).Round(time.Millisecond))

	results := path("/insights_api/projects/%d/campaigns/%d", c.ProjectID, c.ID)
	wantCols := 4 + 18 + 1 + 1 // base, 17 standard questions (AGE twice), one screener, speeder
	measureExport(t, b, "GET", results, nil, n, wantCols)
	measureExport(t, b, "POST", path("/api/v1/campaigns/%d/export_demographics", c.ID), map[string]any{}, n, 3+9+1) // base, 9 questions, speeder
}

// exportRows is how many rows the export timings make: SWITCHBOARD_EXPORT_ROWS, else
// 1,000,000.
func exportRows(t *testing.T) int {
	t.Helper()
	n := 1_000_000
	if v := os.Getenv("SWITCHBOARD_EXPORT_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SWITCHBOARD_EXPORT_ROWS=%q", v)
		}
	}
	return n
}

// measureExport downloads one export, parsing every record, and reports rows, bytes, time
// and the growth of the process's resident set and heap while it streamed.
func measureExport(t *testing.T, b *apptest.Buyer, method, p string, body any, wantRows, wantCols int) {
	t.Helper()
	runtime.GC()
	rssBefore := procStatus(t, "VmRSS")
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	resetPeakRSS := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil // VmHWM := VmRSS

	var peakHeap atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				if m.HeapInuse > peakHeap.Load() {
					peakHeap.Store(m.HeapInuse)
				}
			}
		}
	}()

	start := time.Now()
	req := b.Request(t, method, p, body)
	req.Header.Set("Accept", "text/csv")
	resp, err := b.Server().Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d", method, p, resp.StatusCode)
	}
	var bytesRead countingReader
	bytesRead.r = resp.Body
	// Records are counted, not parsed into strings: the client shares the process whose
	// resident set is measured, so it must allocate nothing per row itself.
	rows, cols, firstByte, err := countRecords(bufio.NewReaderSize(&bytesRead, 64<<10), start)
	if err != nil {
		t.Fatalf("record %d: %v", rows, err)
	}
	if cols != wantCols {
		t.Errorf("%d columns in the header, want %d", cols, wantCols)
	}
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if rows-1 != wantRows {
		t.Errorf("%d data rows, want %d", rows-1, wantRows)
	}
	rssPeak := procStatus(t, "VmHWM")
	growth := "n/a (VmHWM could not be reset)"
	if resetPeakRSS {
		growth = fmt.Sprintf("%.1f MiB", float64(rssPeak-rssBefore)/(1<<20))
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("%s %s: %d rows, %.1f MiB in %v (header after %v; %.0f rows/s, %.1f MiB/s); RSS %.1f MiB before, peak growth %s; heap in use %.1f MiB before, peak %.1f MiB; allocated %.1f MiB (%.0f B a row, the process's background work included)",
		method, strings.SplitN(p, "?", 2)[0], rows-1, float64(bytesRead.n)/(1<<20), took.Round(time.Millisecond),
		firstByte.Round(time.Millisecond), float64(rows-1)/took.Seconds(), float64(bytesRead.n)/(1<<20)/took.Seconds(),
		float64(rssBefore)/(1<<20), growth, float64(before.HeapInuse)/(1<<20), float64(peakHeap.Load())/(1<<20),
		float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), float64(after.TotalAlloc-before.TotalAlloc)/float64(max(rows-1, 1)))
	if resetPeakRSS && rssPeak-rssBefore > 50<<20 {
		t.Errorf("resident set grew by %.1f MiB while streaming, want < 50 MiB", float64(rssPeak-rssBefore)/(1<<20))
	}
}

// countRecords reads CSV records to the end without keeping any: it returns how many there
// are, the fields of the first, and when its first byte arrived (since start). A newline or
// comma inside a quoted field belongs to the field; a doubled quote toggles twice.
func countRecords(r *bufio.Reader, start time.Time) (rows, cols int, firstByte time.Duration, err error) {
	quoted, inRecord := false, false
	cols = 1
	for {
		c, err := r.ReadByte()
		if err == io.EOF {
			if quoted {
				return rows, cols, firstByte, io.ErrUnexpectedEOF
			}
			if inRecord {
				rows++
			}
			return rows, cols, firstByte, nil
		}
		if err != nil {
			return rows, cols, firstByte, err
		}
		if firstByte == 0 {
			firstByte = time.Since(start)
		}
		switch {
		case c == '"':
			quoted = !quoted
			inRecord = true
		case quoted:
		case c == '\n':
			rows++
			inRecord = false
		case c == ',' && rows == 0:
			cols++
			inRecord = true
		default:
			inRecord = true
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// procStatus reads a size field (kB) of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
