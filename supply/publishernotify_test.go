package supply_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// TestPublisherChangesApplyAtOnce: a publisher's token rotation reaches the serve process
// through its NOTIFY, not the 30-second periodic reload: the old token is refused within
// moments, without anyone calling ReloadPublishers.
func TestPublisherChangesApplyAtOnce(t *testing.T) {
	t.Parallel()
	s := apptest.Start(t, apptest.Options{})
	p := newPartner(t, s)
	p.do(t, "GET", "/supply_api/v4/countries", nil, nil).Expect(t, 200)
	start := time.Now()
	tok, err := s.DB.Accounts.RotatePublisherToken(context.Background(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for p.do(t, "GET", "/supply_api/v4/countries", nil, nil).Status != 401 {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the old token still works 10 s after its rotation")
		}
		time.Sleep(20 * time.Millisecond)
	}
	q := *p
	q.Token = tok
	q.do(t, "GET", "/supply_api/v4/countries", nil, nil).Expect(t, 200)
}
