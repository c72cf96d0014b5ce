package admin_test

import (
	"fmt"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

func path(format string, args ...any) string { return fmt.Sprintf(format, args...) }

func TestSmoke(t *testing.T) {
	s := apptest.Start(t, apptest.Options{})
	b := s.NewBuyer(t)
	id := createCampaign(t, b, nil)
	createQuota(t, b, id, nil)
	r := b.Do(t, "PUT", path("/api/v1/campaigns/%d", id), map[string]any{"status": 2}).Expect(t, 200)
	t.Logf("%s", r.Body)
	r = b.Do(t, "GET", "/api/v1/campaigns", nil).Expect(t, 200)
	t.Logf("%s", r.Body)
}
