package router_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// createWithKey sends the buyer's campaign create to base with an Idempotency-Key and returns
// the status and the created campaign's id (0 when none).
func (w *world) createWithKey(c *http.Client, base, key string, body []byte) (int, int64) {
	w.t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/v1/campaigns", bytes.NewReader(body))
	req.SetBasicAuth(w.buyer.Email, w.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var v struct{ ID int64 }
	_ = json.Unmarshal(out, &v)
	return resp.StatusCode, v.ID
}

// TestIdempotentCreateKill9: a serve process is killed (kill -9) while a campaign create
// with an Idempotency-Key is between its create and the storing of its answer (a trigger of
// the test holds that step, and the killed process's database session is ended as
// PostgreSQL ends a dead client's). The key then maps to at most one campaign whatever
// happens next: retried at once on another process it is created (or replayed), not refused
// with 409; retried again after the abandoned-claim timeout (2 minutes, aged here) it is the
// same campaign, never a second one.
func TestIdempotentCreateKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs serve processes")
	}
	w := newWorld(t, "")
	ctx := context.Background()
	p1 := w.serve("")
	w.publicURL = "http://" + p1.addr
	if _, err := w.db.Pool.Exec(ctx, `CREATE FUNCTION test_hold_answer() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.status > 0 THEN PERFORM pg_sleep(120); END IF; RETURN NEW; END $$;
		CREATE TRIGGER test_hold_answer BEFORE UPDATE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION test_hold_answer()`); err != nil {
		t.Fatal(err)
	}
	const key = "crash-2352614a2933"
	body, _ := json.Marshal(map[string]any{"name": "Crash test", "incidence": 50, "length_of_interview": 10,
		"country_language_id": 1, "supplier_link": "https://survey.example/s?id={ID}", "cpi": "2.00"})
	go w.createWithKey(&http.Client{Timeout: time.Minute}, "http://"+p1.addr, key, body)
	waitFor(t, "the create to hold before storing its answer", 30*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'`) > 0
	})
	p1.kill()
	if _, err := w.db.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'PgSleep'`); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Pool.Exec(ctx, `DROP TRIGGER test_hold_answer ON idempotency_keys`); err != nil {
		t.Fatal(err)
	}
	campaigns := func() int64 {
		return w.count(`SELECT count(*) FROM campaigns WHERE buyer_id = $1 AND name = 'Crash test'`, w.buyer.ID)
	}
	waitFor(t, "the killed create's session to end", 30*time.Second, func() bool {
		return w.count(`SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'`) == 0
	})
	before := campaigns()

	p2 := w.serve("")
	status, id := w.createWithKey(w.noFollow, "http://"+p2.addr, key, body)
	if status != 201 || id == 0 {
		t.Errorf("retried at once on another process: %d (campaign %d), want 201 (%d campaigns before it)", status, id, before)
	}
	if n := campaigns(); n != 1 {
		t.Errorf("%d campaigns after the retry, want 1 (%d before it)", n, before)
	}
	// As if the 2 minutes of an abandoned claim had passed.
	if _, err := w.db.Pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = created_at - interval '3 minutes'`); err != nil {
		t.Fatal(err)
	}
	again, id2 := w.createWithKey(w.noFollow, "http://"+p2.addr, key, body)
	if again != 201 || id2 != id && id != 0 {
		t.Errorf("retried after the claim timeout: %d campaign %d, want 201 campaign %d", again, id2, id)
	}
	if n := campaigns(); n != 1 {
		t.Errorf("%d campaigns for one key, want 1", n)
	}
}
