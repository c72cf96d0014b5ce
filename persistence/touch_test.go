package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestTouchParticipantsCountsDays: last_active_at is raised to the touch only when it lies
// on an earlier UTC day; a touch later the same day, or earlier than what is stored, leaves
// the row as it was (no new row version: its xmin does not move), and unknown ids are
// ignored.
func TestTouchParticipantsCountsDays(t *testing.T) {
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pub int64
	err = db.Pool.QueryRow(ctx, `INSERT INTO publishers (name, currency_name, exchange_rate, revenue_share,
		redirect_url, api_secret, environment, token_hash)
		VALUES ('p', 'points', 1, 0.5, 'https://p.example/r', 's', 'live', '\x01') RETURNING id`).Scan(&pub)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 6, 10, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name          string
		stored, touch time.Time
		want          time.Time
	}{
		{"days before", day.Add(-72 * time.Hour), day.Add(9 * time.Hour), day.Add(9 * time.Hour)},
		{"the second before the day", day.Add(-time.Second), day, day},
		{"earlier the same day", day.Add(time.Hour), day.Add(23 * time.Hour), day.Add(time.Hour)},
		{"at the day's start", day, day.Add(time.Minute), day},
		{"later than the touch", day.Add(48 * time.Hour), day.Add(9 * time.Hour), day.Add(48 * time.Hour)},
	}
	ids := make([]int64, len(cases))
	ats := make([]int64, len(cases))
	for i, c := range cases {
		err := db.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile, last_active_at)
			VALUES ($1, $2, (SELECT min(id) FROM countries), '{}', $3) RETURNING id`, pub, c.name, c.stored).Scan(&ids[i])
		if err != nil {
			t.Fatal(err)
		}
		ats[i] = c.touch.Unix()
	}
	xmin := func(id int64) (x string) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `SELECT xmin::text FROM participants WHERE id = $1`, id).Scan(&x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	before := make([]string, len(ids))
	for i, id := range ids {
		before[i] = xmin(id)
	}
	if err := db.Participants.TouchParticipants(ctx, append(ids, 1<<40), append(ats, day.Unix())); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		var got time.Time
		if err := db.Pool.QueryRow(ctx, `SELECT last_active_at FROM participants WHERE id = $1`, ids[i]).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !got.Equal(c.want) {
			t.Errorf("%s: last_active_at %v, want %v", c.name, got.UTC(), c.want)
		}
		if rewritten := xmin(ids[i]) != before[i]; rewritten != !c.want.Equal(c.stored) {
			t.Errorf("%s: row rewritten %v, want %v", c.name, rewritten, !c.want.Equal(c.stored))
		}
	}
	if err := db.Participants.TouchParticipants(ctx, nil, nil); err != nil {
		t.Errorf("no ids: %v", err)
	}
}
