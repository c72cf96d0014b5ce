package persistence_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestLoadActiveParticipantsStreams loads a table of a few thousand participants in one
// stream and in several, while an update moves every row to new pages in the middle of the
// load: each active participant must arrive exactly once, as ParticipantByID reads it (the
// profiles the fast decoder declines included), and no inactive one.
func TestLoadActiveParticipantsStreams(t *testing.T) {
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
	const n = 6000
	_, err = db.Pool.Exec(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile, last_active_at)
		SELECT $1, 'u' || i, (SELECT min(id) FROM countries),
			CASE WHEN i % 97 = 0 THEN jsonb_build_object('45', jsonb_build_array('a"b ' || i))
			ELSE jsonb_build_object('42', jsonb_build_array(18 + i % 62), '45', jsonb_build_array(lpad(i::text, 5, '0')),
				'633', jsonb_build_array(1 + i % 9, 20 + i % 3)) END,
			CASE WHEN i % 10 = 0 THEN now() - interval '90 days' ELSE now() END
		FROM generate_series(1, $2::int) AS i`, pub, n)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	rows, err := db.Pool.Query(ctx, `SELECT id FROM participants WHERE last_active_at > now() - interval '1 day' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	want := map[int64]persistence.PanelParticipant{}
	for _, id := range ids {
		if want[id], err = db.Participants.ParticipantByID(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name       string
		pages      int64
		concurrent bool
	}{ // streams first: the table as inserted, no free space in its pages
		{"streams", 1, false}, {"one stream", 1 << 40, false}, {"streams, concurrent fn", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer persistence.SetLoadStreamPages(tc.pages)()
			got := map[int64]int{}
			var moved sync.Once
			done := make(chan struct{})
			// The last chunk (the one reading to the end of the table) starts its query
			// only after the update has moved every row: it must still read each of its
			// rows once, and none of the earlier chunks' rows.
			defer persistence.SetLoadChunk(700)()
			defer persistence.SetBeforeStream(func(i, n int) {
				if n > 1 && i == n-1 {
					<-done
				}
			})()
			load := db.Participants.LoadActiveParticipants
			if tc.concurrent {
				load = db.Participants.LoadActiveParticipantsConcurrently
			}
			var mu sync.Mutex // for the concurrent fn
			err := load(ctx, time.Now().Add(-24*time.Hour), func(p persistence.PanelParticipant) error {
				mu.Lock()
				defer mu.Unlock()
				moved.Do(func() { // every row gets a new version, at the end of the table
					if _, err := db.Pool.Exec(ctx, `UPDATE participants SET updated_at = now()`); err != nil {
						t.Error(err)
					}
					close(done)
				})
				got[p.ID]++
				w, ok := want[p.ID]
				switch {
				case !ok:
					t.Errorf("inactive or unknown participant %d loaded", p.ID)
				case p.PublisherID != w.PublisherID || p.User != w.User || p.CountryID != w.CountryID ||
					p.LastActive != w.LastActive || len(p.Answers) != len(w.Answers):
					t.Errorf("participant %d: got %+v, want %+v", p.ID, p, w)
				default:
					for i, a := range w.Answers {
						if g := p.Answers[i]; g.QuestionID != a.QuestionID || g.Text != a.Text || !slices.Equal(g.Codes, a.Codes) {
							t.Errorf("participant %d answer %d: got %+v, want %+v", p.ID, i, g, a)
						}
					}
				}
				return nil
			}, func(int64, int64, int64) {})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Errorf("loaded %d participants, want %d", len(got), len(want))
			}
			for id, c := range got {
				if c != 1 {
					t.Errorf("participant %d loaded %d times", id, c)
				}
			}
		})
	}
}
