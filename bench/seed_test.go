package bench

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine/synth"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPartitionSessions checks that the seed gives every id of the sessions it is about to
// copy a partition: twelve million rows reach past the partition a fresh database starts
// with (ten million ids), and an id without one fails the whole copy.
func TestPartitionSessions(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const n = 12_000_000
	var next int64
	if err := conn.QueryRow(ctx, `SELECT last_value + 1 FROM sessions_id_seq`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second call adds nothing
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := partitionSessions(ctx, tx, n); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, `SELECT id_from, id_to FROM session_partitions ORDER BY id_from`)
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ from, to int64 }
	spans, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (span, error) {
		var s span
		err := r.Scan(&s.from, &s.to)
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) < 2 {
		t.Fatalf("partitions %v: want the starting one and more", spans)
	}
	for i := 1; i < len(spans); i++ {
		if spans[i].from != spans[i-1].to {
			t.Fatalf("partitions %v leave a gap at %d", spans, spans[i-1].to)
		}
	}
	if top := spans[len(spans)-1].to; top <= next+n {
		t.Fatalf("partitions reach id %d, the copy takes ids up to %d", top, next+n-1)
	}
	var attached int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'sessions'::regclass`).Scan(&attached); err != nil {
		t.Fatal(err)
	}
	if attached != len(spans) {
		t.Fatalf("%d partitions attached to sessions, %d recorded", attached, len(spans))
	}
}

// TestSessionsSplit checks that the callbacks phases share the admitted sessions: each is
// handed out once, half kept for the open loop.
func TestSessionsSplit(t *testing.T) {
	s := &Sessions{max: 10}
	for i := range 5 {
		s.push(admitted{tid: string(rune('a' + i)), campaign: int64(i)})
	}
	later := s.split()
	if s.Len() != 3 || later.Len() != 2 {
		t.Fatalf("split of 5: %d and %d, want 3 and 2", s.Len(), later.Len())
	}
	seen := map[string]bool{}
	for _, set := range []*Sessions{s, later} {
		for {
			a, ok := set.pop()
			if !ok {
				break
			}
			if seen[a.tid] {
				t.Fatalf("session %q handed out twice", a.tid)
			}
			seen[a.tid] = true
		}
	}
	if len(seen) != 5 {
		t.Fatalf("%d sessions handed out, want 5", len(seen))
	}
}

// The seed writes the panel as it generates it: the participants, their profiles and their
// histories are synth.Participants' for the market's seed, and the load's view of them
// (Market.Participants) is theirs too.
func TestSeedStreamsThePanel(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	m := GenerateMarket(40, 300, 5)
	if _, err := Seed(ctx, url, m, true, time.Now(), zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	want := synth.Participants(300, 6, 40)
	if len(m.Participants) != len(want) {
		t.Fatalf("%d panelists, want %d", len(m.Participants), len(want))
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sessions := map[[2]int64]int{}
	rows, err := conn.Query(ctx, `SELECT participant_id, campaign_id FROM sessions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k [2]int64
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			t.Fatal(err)
		}
		sessions[k]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, p := range want {
		if got := m.Participants[i]; got != (Panelist{ID: p.ID, Device: p.Device, DeviceID: p.DeviceID}) {
			t.Fatalf("panelist %d: %+v, want participant %d device %d %q", i, got, p.ID, p.Device, p.DeviceID)
		}
		var profile []byte
		if err := conn.QueryRow(ctx, `SELECT profile::text FROM participants WHERE id = $1`, p.ID).Scan(&profile); err != nil {
			t.Fatal(err)
		}
		var got, exp map[string]any
		if err := json.Unmarshal(profile, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(profileJSON(p.Answers), &exp); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, exp) {
			t.Fatalf("participant %d: profile %v, want %v", p.ID, got, exp)
		}
		for _, e := range p.Entries {
			if sessions[[2]int64{p.ID, e.CampaignID}] != 1 {
				t.Fatalf("participant %d campaign %d: %d sessions, want 1", p.ID, e.CampaignID, sessions[[2]int64{p.ID, e.CampaignID}])
			}
			total++
		}
	}
	if total == 0 || len(sessions) != total {
		t.Fatalf("%d (participant, campaign) pairs in sessions, want %d", len(sessions), total)
	}
}
