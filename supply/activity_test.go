package supply

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestFlushActivity: the write-back sends the participants active since the last flush (and
// only them) to the database, which keeps each one's first activity of a day; the next
// flush starts from this one's mark.
func TestFlushActivity(t *testing.T) {
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
	day := time.Date(2026, 6, 10, 0, 0, 0, 0, time.UTC).Unix()
	old := day - 5*86400
	now := day + 3600
	a := &panelMirror{participants: db.Participants, panel: engine.NewPanel(), now: func() int64 { return now }}
	ids := make([]int64, 3)
	for i, user := range []string{"quiet", "back today", "back twice"} {
		err := db.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile, last_active_at)
			VALUES ($1, $2, (SELECT min(id) FROM countries), '{}', to_timestamp($3)) RETURNING id`, pub, user, old).Scan(&ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.panel.Upsert(pub, user, engine.Participant{ID: ids[i], CountryID: 1}, old); err != nil {
			t.Fatal(err)
		}
	}
	stored := func(id int64) (at int64) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `SELECT extract(epoch FROM last_active_at)::bigint FROM participants WHERE id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	a.panel.Touch(ids[1], day+600)
	a.panel.Touch(ids[2], day+900)
	mark, err := a.flushActivity(ctx, day)
	if err != nil || mark != now {
		t.Fatalf("first flush: mark %d, %v; want %d", mark, err, now)
	}
	if got := []int64{stored(ids[0]), stored(ids[1]), stored(ids[2])}; got[0] != old || got[1] != day+600 || got[2] != day+900 {
		t.Fatalf("after the first flush: %v, want [%d %d %d]", got, old, day+600, day+900)
	}
	// Later the same day: the database keeps the day's first activity.
	a.panel.Touch(ids[2], day+7200)
	now = day + 7300
	if mark, err = a.flushActivity(ctx, mark); err != nil || mark != now {
		t.Fatalf("second flush: mark %d, %v", mark, err)
	}
	if got := stored(ids[2]); got != day+900 {
		t.Errorf("a second activity the same day moved last_active_at to %d, want %d", got, day+900)
	}
	// The next day it moves.
	a.panel.Touch(ids[2], day+86400+60)
	if _, err = a.flushActivity(ctx, mark); err != nil {
		t.Fatal(err)
	}
	if got := stored(ids[2]); got != day+86400+60 {
		t.Errorf("the next day's activity: last_active_at %d, want %d", got, day+86400+60)
	}
}
