package guides_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/router/supplierlink"
	"github.com/switchboard/switchboard/supply"
)

// The worked examples' fixed inputs. Every number the guides print for them is computed
// by the production signing code and checked here against an HMAC computed independently.
const (
	exampleTID        = "8c2f6d0e4b1a9375c6e2d8f0a1b3c5d7"
	exampleCustomerID = "5e0c3a7d9b2f4e6a8c1d3f5b7a9e2c4d"
	exampleRespondent = "R7Q2M9X4K1"
	exampleUser       = "user-1001"
	exampleTS         = int64(1767225600) // 2026-01-01T00:00:00Z
)

// worked holds the worked examples the templates print.
type worked struct {
	LinkTemplate, LinkSigned, LinkHash, LinkFinal      string
	CallbackSigned, CallbackSech, CallbackURL          string
	RedirectURL, RedirectSigned, RedirectSech          string
	PostbackURL, PostbackSigned, PostbackSech          string
	RefusedURL                                         string
	ImpanelSigned, ImpanelSech                         string
	WebhookBody, WebhookSigned, WebhookSignature       string
	TID, CustomerID, Respondent, User, BuyerSecret     string
	PubSecret, PublicURL, PartnerRedirect, PartnerPost string
	PartnerHost                                        string
	TS                                                 int64
	Pay                                                []payRow
}

// payRow is one line of the payout table.
type payRow struct {
	Outcome, Spent, USD string
	Reward              int64
}

// splitSech splits a signed partner URL into the query the signature covers and sech.
func splitSech(t *testing.T, raw string) (signed, sech string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(u.RawQuery, "&sech=")
	if i < 0 {
		t.Fatalf("no sech in %s", raw)
	}
	return u.RawQuery[:i], u.RawQuery[i+len("&sech="):]
}

func workedExamples(t *testing.T) worked {
	t.Helper()
	w := worked{TID: exampleTID, CustomerID: exampleCustomerID, Respondent: exampleRespondent, User: exampleUser,
		BuyerSecret: buyerSecret, PubSecret: pubSecret, PublicURL: publicURL, TS: exampleTS,
		PartnerHost: partnerHost, PartnerRedirect: partnerHost + "/back?app=7", PartnerPost: partnerHost + "/postback"}

	// {LINK_HASH}: the supplier link, placeholders filled, signed without security_hash.
	w.LinkTemplate = "https://survey.example/s/coffee?rid={RESPONDENT_ID}&age={AGE}&security_hash={LINK_HASH}"
	w.LinkFinal = supplierlink.Build(w.LinkTemplate, supplierlink.Values{TID: exampleTID, RespondentID: exampleRespondent,
		Answers: []engine.Answer{{QuestionID: 42, Codes: []int32{34}}}}, buyerSecret)
	i := strings.LastIndex(w.LinkFinal, "&security_hash=")
	w.LinkSigned, w.LinkHash = w.LinkFinal[:i], w.LinkFinal[i+len("&security_hash="):]
	if want := "https://survey.example/s/coffee?rid=" + exampleRespondent + "&age=34&id=" + exampleTID; w.LinkSigned != want {
		t.Fatalf("supplier link signs %s, want %s", w.LinkSigned, want)
	}
	if h := hmacHex(sha1.New, buyerSecret, w.LinkSigned); w.LinkHash != h || supplierlink.Hash(w.LinkSigned, buyerSecret) != h {
		t.Fatalf("LINK_HASH %s, want %s", w.LinkHash, h)
	}

	// tr_sech: HMAC-SHA1 of the public callback URL up to &tr_sech=.
	path := "/router/customers/" + exampleCustomerID + "/cps/complete?tid=" + exampleTID
	w.CallbackSigned = publicURL + path
	w.CallbackSech = router.CallbackHash(publicURL, path, buyerSecret)
	if h := hmacHex(sha1.New, buyerSecret, w.CallbackSigned); w.CallbackSech != h {
		t.Fatalf("tr_sech %s, want %s", w.CallbackSech, h)
	}
	w.CallbackURL = w.CallbackSigned + "&tr_sech=" + w.CallbackSech
	if !router.VerifyCallback(publicURL, path+"&tr_sech="+w.CallbackSech, buyerSecret) ||
		router.VerifyCallback(publicURL, path+"&tr_sech="+hmacHex(sha1.New, "other", w.CallbackSigned), buyerSecret) ||
		router.VerifyCallback(publicURL, path+"&tr_sech="+w.CallbackSech+"&x=1", buyerSecret) {
		t.Fatal("VerifyCallback disagrees with the worked tr_sech")
	}

	// Payouts: what each outcome of a 2.50 cpi campaign pays a partner with revenue share
	// 0.5 and 100 coins a dollar, by the production rules.
	rules := payout.DefaultRules()
	entered := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		outcome string
		spent   time.Duration
	}{
		{outcome.Complete, 9 * time.Minute},
		{outcome.OverQuota, 90 * time.Second},
		{outcome.Disqualified, 4 * time.Minute},
		{outcome.Disqualified, 25 * time.Minute},
		{outcome.QualityTerm, 6 * time.Minute},
	} {
		p := rules.Pay(payout.Session{Outcome: c.outcome, CPICents: 250, EnteredAt: entered, OutcomeAt: entered.Add(c.spent)}, 0.5, 100)
		w.Pay = append(w.Pay, payRow{Outcome: c.outcome, Spent: c.spent.String(), USD: p.USD.String(), Reward: p.Reward})
	}
	complete := w.Pay[0]

	// Partner redirect and postback: HMAC-SHA256 of the raw query before &sech=.
	pub := persistence.Publisher{RedirectURL: w.PartnerRedirect, PostbackURL: w.PartnerPost, APISecret: pubSecret}
	usd := payout.CompletePayout(250, 0.5)
	w.RedirectURL = payout.RedirectURL(pub, payout.Fields{TID: exampleTID, Status: outcome.Complete, Reward: complete.Reward})
	w.RedirectSigned, w.RedirectSech = splitSech(t, w.RedirectURL)
	w.PostbackURL = payout.PostbackURL(pub, payout.Fields{TID: exampleTID, Status: outcome.Complete, Reward: complete.Reward,
		PayoutUSD: usd, UserIdentifier: exampleUser})
	w.PostbackSigned, w.PostbackSech = splitSech(t, w.PostbackURL)
	w.RefusedURL = payout.NotEligibleURL(pub)
	for _, u := range []struct{ signed, sech string }{{w.RedirectSigned, w.RedirectSech}, {w.PostbackSigned, w.PostbackSech}} {
		if h := hmacHex(sha256.New, pubSecret, u.signed); u.sech != h || !payout.VerifySech(u.signed+"&sech="+u.sech, pubSecret) {
			t.Fatalf("sech of %s is %s, want %s", u.signed, u.sech, h)
		}
	}
	if usd.String() != complete.USD {
		t.Fatalf("complete pays %s, table says %s", usd, complete.USD)
	}

	// Webhook signature: HMAC-SHA256 of "<timestamp>.<body>".
	w.WebhookBody = `{"data": {"new_status": 2, "old_status": 5}, "type": "campaign.status_changed", "event_id": "evt_0f8e2d4c6b1a49e7a3c5d7f9b2e4c6a8", "campaign_id": 1, "occurred_at": "2026-01-01T00:00:00.000000Z"}`
	w.WebhookSigned = "1767225600." + w.WebhookBody
	w.WebhookSignature = payout.SignWebhook(buyerSecret, exampleTS, []byte(w.WebhookBody))
	if h := hmacHex(sha256.New, buyerSecret, w.WebhookSigned); w.WebhookSignature != h ||
		!payout.VerifyWebhook(buyerSecret, "1767225600", h, []byte(w.WebhookBody), time.Unix(exampleTS, 0), 5*time.Minute) ||
		payout.VerifyWebhook(buyerSecret, "1767225600", h, []byte(w.WebhookBody), time.Unix(exampleTS+301, 0), 5*time.Minute) ||
		payout.VerifyWebhook(buyerSecret, "1767225601", h, []byte(w.WebhookBody), time.Unix(exampleTS, 0), 5*time.Minute) {
		t.Fatalf("webhook signature %s, want %s", w.WebhookSignature, h)
	}

	// Impanel sech: HMAC-SHA256 of "<user_identifier>:<ts>".
	w.ImpanelSigned = exampleUser + ":1767225600"
	w.ImpanelSech = supply.Sech(pubSecret, exampleUser, exampleTS)
	if h := hmacHex(sha256.New, pubSecret, w.ImpanelSigned); w.ImpanelSech != h {
		t.Fatalf("impanel sech %s, want %s", w.ImpanelSech, h)
	}
	return w
}
