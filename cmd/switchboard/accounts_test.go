package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestPublisherCreateMoneyBounds: `publisher create` holds --exchange-rate and
// --revenue-share to the money bounds (docs/rules.md §7) with an error naming the flag, and
// takes the largest of them.
func TestPublisherCreateMoneyBounds(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	cases := []struct {
		rate, share string
		wantErr     string // "" created
	}{
		{"1000000000", "1", ""},
		{"0.0001", "0.0001", ""},
		{"1000000001", "1", "--exchange-rate must be between 0.0001 and 1000000000"},
		{"0", "0.5", "--exchange-rate must be between"},
		{"100", "1.5", "--revenue-share must be between 0.0001 and 1"},
		{"100", "0", "--revenue-share must be between"},
	}
	for _, tc := range cases {
		var out bytes.Buffer
		err := dispatch(ctx, []string{"publisher", "create", "--database-url", url, "--name", "P", "--currency-name", "gems",
			"--exchange-rate", tc.rate, "--revenue-share", tc.share, "--redirect-url", "https://p.example/back"}, &out)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("rate %s share %s: %v", tc.rate, tc.share, err)
		case tc.wantErr == "":
			var m map[string]any
			if json.Unmarshal(out.Bytes(), &m) != nil || m["publisher_id"] == nil {
				t.Errorf("rate %s share %s: printed %s", tc.rate, tc.share, out.Bytes())
			}
		case err == nil || !strings.HasPrefix(err.Error(), tc.wantErr):
			t.Errorf("rate %s share %s: error %v, want %q…", tc.rate, tc.share, err, tc.wantErr)
		}
	}
}
