package admin_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestIdempotencyKey: a create retried with the same Idempotency-Key and body gets the first
// answer again and stores nothing new; another body is a 422 naming the header, as is a bad
// key; without the header every request creates.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	send := func(path, key string, body map[string]any) apptest.Response {
		t.Helper()
		req := b.Request(t, "POST", path, body)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		return s.Send(t, req)
	}
	count := func(table string) int {
		t.Helper()
		var n int
		q := `SELECT count(*) FROM campaigns WHERE buyer_id = $1`
		if table == "campaign_quotas" {
			q = `SELECT count(*) FROM campaign_quotas q JOIN campaigns c ON c.id = q.campaign_id WHERE c.buyer_id = $1`
		}
		if err := s.DB.Pool.QueryRow(context.Background(), q, b.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	other := campaignBody()
	other["name"] = "Tea habits"

	first := send("/api/v1/campaigns", "k-1", campaignBody()).Expect(t, 201)
	again := send("/api/v1/campaigns", "k-1", campaignBody()).Expect(t, 201)
	if !bytes.Equal(first.Body, again.Body) {
		t.Errorf("replay differs:\n%s\n%s", first.Body, again.Body)
	}
	if n := count("campaigns"); n != 1 {
		t.Errorf("campaigns after replay = %d, want 1", n)
	}
	if msg := send("/api/v1/campaigns", "k-1", other).Expect(t, 422).Message(t); !strings.Contains(msg, "Idempotency-Key") {
		t.Errorf("other body: message %q does not name the header", msg)
	}
	for _, bad := range []string{strings.Repeat("x", 256), "caf\u00e9", "a\tb"} {
		if msg := send("/api/v1/campaigns", bad, campaignBody()).Expect(t, 422).Message(t); !strings.Contains(msg, "Idempotency-Key") {
			t.Errorf("key %q: message %q does not name the header", bad, msg)
		}
	}
	// A failed create keeps nothing: the key stays free for a corrected body.
	bad := campaignBody()
	bad["incidence"] = -1
	send("/api/v1/campaigns", "k-2", bad).Expect(t, 422)
	send("/api/v1/campaigns", "k-2", other).Expect(t, 201)
	if n := count("campaigns"); n != 2 {
		t.Errorf("campaigns = %d, want 2", n)
	}
	send("/api/v1/campaigns", "", campaignBody()).Expect(t, 201)
	send("/api/v1/campaigns", "", campaignBody()).Expect(t, 201)
	if n := count("campaigns"); n != 4 {
		t.Errorf("campaigns without key = %d, want 4", n)
	}

	// A key older than 24 hours is forgotten: the same request creates again.
	if _, err := s.DB.Pool.Exec(context.Background(), `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE buyer_id = $1 AND key = 'k-1'`, b.ID); err != nil {
		t.Fatal(err)
	}
	if late := send("/api/v1/campaigns", "k-1", other).Expect(t, 201); bytes.Equal(late.Body, first.Body) {
		t.Error("an expired key replayed its answer")
	}
	if n := count("campaigns"); n != 5 {
		t.Errorf("campaigns after expiry = %d, want 5", n)
	}

	// Quotas: the key is per campaign path; the same key on another campaign is another request.
	var c struct {
		ID int64 `json:"id"`
	}
	first.Decode(t, &c)
	qpath := path("/api/v1/campaigns/%d/campaign_quotas", c.ID)
	q1 := send(qpath, "q-1", quotaBody()).Expect(t, 201)
	q2 := send(qpath, "q-1", quotaBody()).Expect(t, 201)
	if !bytes.Equal(q1.Body, q2.Body) {
		t.Errorf("quota replay differs:\n%s\n%s", q1.Body, q2.Body)
	}
	otherQuota := quotaBody()
	otherQuota["name"] = "Men"
	send(qpath, "q-1", otherQuota).Expect(t, 422)
	if n := count("campaign_quotas"); n != 1 {
		t.Errorf("quotas = %d, want 1", n)
	}
}
