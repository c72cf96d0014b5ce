package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine/synth"
	"github.com/switchboard/switchboard/persistence"
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
		if err := partitionSessions(ctx, tx, n, seedPartitionIDs); err != nil {
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
	// Each buyer a participant entered knows them by one respondent id, in respondents and
	// on every session of theirs, and by no other.
	var pairs, respondents, mismatched int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(DISTINCT (buyer_id, participant_id)) FROM sessions),
		(SELECT count(*) FROM respondents),
		(SELECT count(*) FROM sessions s LEFT JOIN respondents r USING (buyer_id, participant_id)
			WHERE r.respondent_id IS DISTINCT FROM s.respondent_id)`).Scan(&pairs, &respondents, &mismatched); err != nil {
		t.Fatal(err)
	}
	if pairs == 0 || respondents != pairs || mismatched != 0 {
		t.Fatalf("%d respondents for %d (buyer, participant) pairs in sessions; %d sessions without their respondent id",
			respondents, pairs, mismatched)
	}
	// The campaigns' daily counts are their sessions' outcomes, as serve's callbacks count
	// them: what the engine learns conversion and sessions so far from.
	var days, differ int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM campaign_daily_counts), count(*) FROM (
		  SELECT campaign_id, (outcome_at AT TIME ZONE 'UTC')::date AS day, count(*) AS outcomes,
		    count(*) FILTER (WHERE outcome = 'complete') AS completes
		  FROM sessions WHERE outcome IS NOT NULL GROUP BY 1, 2) s
		FULL JOIN campaign_daily_counts d USING (campaign_id, day)
		WHERE s.outcomes IS DISTINCT FROM d.outcomes OR s.completes IS DISTINCT FROM d.completes`).Scan(&days, &differ); err != nil {
		t.Fatal(err)
	}
	if days == 0 || differ != 0 {
		t.Fatalf("%d campaign days counted, %d of them unlike the sessions' outcomes", days, differ)
	}
	// Every campaign's sweep mark lies past its seeded sessions, all decided, as a serving
	// database's sweeper leaves them.
	var unmarked, behind int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM campaigns c LEFT JOIN session_sweep_marks m ON m.campaign_id = c.id WHERE m.campaign_id IS NULL),
		(SELECT count(*) FROM sessions s JOIN session_sweep_marks m USING (campaign_id) WHERE s.id >= m.next_id OR s.outcome IS NULL)`).Scan(&unmarked, &behind); err != nil {
		t.Fatal(err)
	}
	if unmarked != 0 || behind != 0 {
		t.Fatalf("%d campaigns without a sweep mark, %d seeded sessions at or past their campaign's mark or undecided", unmarked, behind)
	}
}

// The past sessions are the months before the market's own history: ids 1..PastSessions in
// time order over the eleven months before the last thirty days, in closed campaigns only,
// each tid naming its id as serve's do (a callback's lookup finds it in its block), and the
// market's history after them.
func TestSeedPastSessions(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	m := GenerateMarket(40, 300, 5)
	m.PastSessions = 4500
	now := time.Now()
	if _, err := Seed(ctx, url, m, true, now, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var past, minID, maxID, closedIn, disordered, history, historyMin int64
	var oldest, newest time.Time
	if err := conn.QueryRow(ctx, `SELECT count(*), min(id), max(id), count(DISTINCT campaign_id), min(entered_at), max(entered_at),
		count(*) FILTER (WHERE entered_at < lag) FROM (
		  SELECT id, campaign_id, entered_at, lag(entered_at) OVER (ORDER BY id) FROM sessions WHERE campaign_id > 40) s`).
		Scan(&past, &minID, &maxID, &closedIn, &oldest, &newest, &disordered); err != nil {
		t.Fatal(err)
	}
	if past != 4500 || minID != 1 || maxID != 4500 || disordered != 0 {
		t.Fatalf("past sessions: %d with ids %d..%d, %d out of time order; want 4500 with ids 1..4500 in time order", past, minID, maxID, disordered)
	}
	if oldest.Before(now.Add(-366*24*time.Hour)) || newest.After(now.Add(-30*24*time.Hour)) {
		t.Fatalf("past sessions entered %v..%v, want within the eleven months before the last thirty days", oldest, newest)
	}
	if closedIn != m.PastCampaigns() {
		t.Fatalf("past sessions in %d campaigns, want %d", closedIn, m.PastCampaigns())
	}
	var closed int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM campaigns WHERE id > 40 AND status IN (4, 6) AND status_changed_at < now() - interval '30 days'`).
		Scan(&closed); err != nil {
		t.Fatal(err)
	}
	if closed != m.PastCampaigns() {
		t.Fatalf("%d closed campaigns, want %d archived or reconciled", closed, m.PastCampaigns())
	}
	var foreign int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM sessions s JOIN campaigns c ON c.id = s.campaign_id WHERE s.buyer_id <> c.buyer_id`).
		Scan(&foreign); err != nil || foreign != 0 {
		t.Fatalf("%d sessions name another buyer than their campaign's (%v)", foreign, err)
	}
	var early, unrecorded int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM sessions s JOIN campaigns c ON c.id = s.campaign_id WHERE s.entered_at < c.created_at),
		(SELECT count(*) FROM session_partitions WHERE id_from <= (SELECT last_value FROM sessions_id_seq) AND first_entered_at IS NULL)`).
		Scan(&early, &unrecorded); err != nil || early != 0 || unrecorded != 0 {
		t.Fatalf("%d sessions entered before their campaign was created, %d partitions holding sessions without a time range (%v)", early, unrecorded, err)
	}
	for _, id := range []int64{1, 40, 41, 45} {
		var owner int64
		if err := conn.QueryRow(ctx, `SELECT buyer_id FROM campaigns WHERE id = $1`, id).Scan(&owner); err != nil || owner != m.BuyerOf(id).ID {
			t.Fatalf("campaign %d: buyer %d, BuyerOf says %d (%v)", id, owner, m.BuyerOf(id).ID, err)
		}
	}
	if err := conn.QueryRow(ctx, `SELECT count(*), min(id) FROM sessions WHERE campaign_id <= 40`).Scan(&history, &historyMin); err != nil {
		t.Fatal(err)
	}
	if history == 0 || historyMin <= 4500 {
		t.Fatalf("market history: %d sessions from id %d, want some after the past ones", history, historyMin)
	}
	db, err := persistence.Open(ctx, url, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range []int64{1, 2250, 4500} {
		var tid string
		if err := conn.QueryRow(ctx, `SELECT tid FROM sessions WHERE id = $1`, id).Scan(&tid); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%05x", id>>20); len(tid) != 32 || tid[:5] != want {
			t.Fatalf("session %d: tid %s does not lead with its block %s", id, tid, want)
		}
		s, err := db.Sessions.SessionByTID(ctx, tid)
		if err != nil || s.ID != id {
			t.Fatalf("session %d by tid %s: %+v, %v", id, tid, s, err)
		}
	}
}

// After a year of past sessions the seed cuts partitions of a month of them (as serve's
// sweeper would at that rate), or of PartitionDays; a new marketplace's are the sweeper's
// smallest.
func TestPartitionIDs(t *testing.T) {
	for _, c := range []struct {
		past int64
		days int
		want int64
	}{{0, 0, seedPartitionIDs}, {4500, 0, seedPartitionIDs}, {100_000_000, 0, 8_955_223}, {100_000_000, 30, 8_955_223},
		{100_000_000, 7, 2_089_552}, {4500, 7, seedPartitionIDs}} {
		if got := (&Market{PastSessions: c.past, PartitionDays: c.days}).partitionIDs(); got != c.want {
			t.Errorf("%d past sessions, %d days: partitions of %d ids, want %d", c.past, c.days, got, c.want)
		}
	}
}
