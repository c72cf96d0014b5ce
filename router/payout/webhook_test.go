package payout

import (
	"testing"
	"time"
)

// TestVerifyWebhook: only the exact body, signed with the secret, at a time within the
// tolerance, verifies.
func TestVerifyWebhook(t *testing.T) {
	now := time.Unix(1767225600, 0)
	body := []byte(`{"event_id": "evt_1"}`)
	sig := SignWebhook("s3cret", now.Unix(), body)
	for _, tc := range []struct {
		name, secret, ts, sig string
		body                  []byte
		at                    time.Time
		want                  bool
	}{
		{"valid", "s3cret", "1767225600", sig, body, now, true},
		{"within tolerance", "s3cret", "1767225600", sig, body, now.Add(5 * time.Minute), true},
		{"replayed later", "s3cret", "1767225600", sig, body, now.Add(5*time.Minute + time.Second), false},
		{"from the future", "s3cret", "1767225600", sig, body, now.Add(-6 * time.Minute), false},
		{"other secret", "other", "1767225600", sig, body, now, false},
		{"other timestamp", "s3cret", "1767225601", sig, body, now, false},
		{"body changed", "s3cret", "1767225600", sig, []byte(`{"event_id":"evt_1"}`), now, false},
		{"truncated signature", "s3cret", "1767225600", sig[:62], body, now, false},
		{"not hex", "s3cret", "1767225600", "zz" + sig[2:], body, now, false},
		{"no timestamp", "s3cret", "", sig, body, now, false},
	} {
		if got := VerifyWebhook(tc.secret, tc.ts, tc.sig, tc.body, tc.at, 5*time.Minute); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
