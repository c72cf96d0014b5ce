package router_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/persistence"
)

// TestOfferOutlivesNoResume: the database looks for an offer's session in progress only
// among sessions admitted within persistence.OfferSessionAge, which must be longer than an
// offer token lives (with room for a slow admission), or a link followed again late in its
// life would be admitted twice.
func TestOfferOutlivesNoResume(t *testing.T) {
	if life := time.Duration(entrytoken.TTL) * time.Second; life+time.Minute >= persistence.OfferSessionAge {
		t.Fatalf("an offer token lives %v, the database looks back %v for its session", life, persistence.OfferSessionAge)
	}
}

// TestOfferLinkFollowedTwice: an offer link followed again while its session is in
// progress (a browser resending a GET whose answer was lost, a double click) answers the
// same session, and takes no second place, both when the engine still sees room and when
// the first entry took the quota's last place (the engine then refuses, and the database
// is asked); another offer of the same campaign is a second entry, decided by the rules;
// and once the session has its outcome the link is an entry like any other.
func TestOfferLinkFollowedTwice(t *testing.T) {
	w := newWorld(t, "")
	s := w.startInProcess()
	base := s.URL
	w.survey.outcome = func(string) string { return "" } // the test calls back itself
	follow := func(u string) string {
		t.Helper()
		resp, _ := w.get(w.noFollow, u)
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("entry: %d", resp.StatusCode)
		}
		return resp.Header.Get("Location")
	}
	tidOf := func(loc string) string {
		u, _ := url.Parse(loc)
		return u.Query().Get("tid")
	}
	counts := func(quota int64) (entries, inProgress int64) {
		return w.count(`SELECT entries FROM campaign_quotas WHERE id = $1`, quota),
			w.count(`SELECT in_progress FROM campaign_quotas WHERE id = $1`, quota)
	}
	ps := w.participants(3)
	for _, tc := range []struct {
		name  string
		quota int
	}{{"room left", 5}, {"last place", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			camp, quota := w.campaign(base, campaignOpts{quota: tc.quota})
			w.settle()
			p := ps[0]
			if tc.quota == 1 {
				p = ps[1]
			}
			link := w.entryURL(base, p, camp)
			first := follow(link)
			tid := tidOf(first)
			if !strings.HasPrefix(first, w.survey.srv.URL) || tid == "" {
				t.Fatalf("first entry went to %s", first)
			}
			w.settle() // the engine hears of the entry (and, at the last place, of the full quota)
			if again := follow(link); again != first {
				t.Errorf("the link followed again went to\n%s\nwant the same session's\n%s", again, first)
			}
			if e, ip := counts(quota); e != 1 || ip != 1 {
				t.Errorf("entries %d, in_progress %d after one entry followed twice; want 1, 1", e, ip)
			}
			if n := w.count(`SELECT count(*) FROM sessions WHERE campaign_id = $1`, camp); n != 1 {
				t.Errorf("%d sessions, want 1", n)
			}
			// Another offer of the same campaign is another entry (reentry_interval 0 allows
			// it when there is room).
			other := follow(w.entryURL(base, p, camp))
			if tc.quota == 1 {
				if tidOf(other) != "" {
					t.Errorf("a second offer into a full quota entered: %s", other)
				}
			} else if id := tidOf(other); id == "" || id == tid {
				t.Errorf("a second offer went to %s, want a new session", other)
			}
			// With its outcome stored, the link is an entry like any other.
			resp, _ := w.get(w.noFollow, strings.Replace(w.callbackURL("disqualified", tid, w.buyer.APISecret), w.publicURL, base, 1))
			if resp.StatusCode != http.StatusFound {
				t.Fatalf("callback: %d", resp.StatusCode)
			}
			w.settle()
			if after := follow(link); tidOf(after) == tid {
				t.Errorf("the link followed after the outcome resumed the finished session %s", tid)
			}
		})
	}
	// Two follows of one link racing each other make one session.
	camp, quota := w.campaign(base, campaignOpts{quota: 5})
	w.settle()
	link := base + "/supply_api/v4/entry?token=" + w.key.Sign(entrytoken.Claims{Kind: entrytoken.KindOffer,
		PublisherID: w.pub.ID, ParticipantID: ps[2], CampaignID: camp, DeviceType: 2,
		Expires: time.Now().Unix() + entrytoken.TTL, Nonce: entrytoken.NewNonce()})
	locs := make(chan string, 4)
	for range cap(locs) {
		go func() {
			resp, err := w.noFollow.Get(link)
			if err != nil {
				locs <- err.Error()
				return
			}
			resp.Body.Close()
			locs <- resp.Header.Get("Location")
		}()
	}
	want := <-locs
	for range cap(locs) - 1 {
		if got := <-locs; got != want {
			t.Errorf("concurrent follows of one link went to\n%s\nand\n%s", want, got)
		}
	}
	if e, ip := counts(quota); e != 1 || ip != 1 {
		t.Errorf("entries %d, in_progress %d after one link followed 4 times at once; want 1, 1", e, ip)
	}
}
