package apidocs_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/apidocs/buyerclient"
	"github.com/switchboard/switchboard/cmd/apidocs/supplyclient"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply"
)

// TestWalkthroughThroughClients runs the README walk-through, and the session that
// follows it, through the clients generated from the documents against a running app: the
// buyer lists the country languages, creates a campaign, adds a quota of women 25 to 34,
// activates the campaign and reads it back; the partner impanels a participant, gets the
// campaign as an offer, enters it, and the buyer's end link reports a complete that
// redirects the participant to the partner.
func TestWalkthroughThroughClients(t *testing.T) {
	const pubToken, pubSecret, user = "publisher-api-token", "publisher-api-secret", "walkthrough-user-1"
	ctx := context.Background()
	s := apptest.Start(t, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(t)
	if _, _, err := s.DB.Accounts.CreatePublisherWith(ctx, persistence.NewPublisher{Name: "Example Games", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://partner.example/back?app=7", Environment: s.Env},
		pubToken, pubSecret); err != nil {
		t.Fatal(err)
	}
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	// s.Client does not follow redirects: entry and the end link answer 302s to check.
	buyer, err := buyerclient.NewClientWithResponses(s.URL, buyerclient.WithHTTPClient(s.Client),
		buyerclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.SetBasicAuth(b.Email, b.Token)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	partner, err := supplyclient.NewClientWithResponses(s.URL, supplyclient.WithHTTPClient(s.Client),
		supplyclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("X-Api-Token", pubToken)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	status := func(step string, got, want int, body []byte) {
		t.Helper()
		if got != want {
			t.Fatalf("%s: status %d, want %d; body %s", step, got, want, body)
		}
	}

	// 1. The country languages campaigns can target.
	cls, err := buyer.ListCountryLanguagesWithResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	status("country_languages", cls.StatusCode(), 200, cls.Body)
	if len(*cls.JSON200) == 0 || (*cls.JSON200)[0].Abbr != "en-US" {
		t.Fatalf("country_languages: %+v", *cls.JSON200)
	}

	// 2. Create a campaign (it starts paused, status 5).
	created, err := buyer.CreateCampaignWithResponse(ctx, nil, buyerclient.CampaignCreate{Name: "Coffee habits", Incidence: 40,
		LengthOfInterview: 12, CountryLanguageId: 1, SupplierLink: "https://survey.example.com/s/coffee?tid={ID}"})
	if err != nil {
		t.Fatal(err)
	}
	status("create campaign", created.StatusCode(), 201, created.Body)
	campaign := created.JSON201
	if campaign.Status != 5 {
		t.Fatalf("a new campaign has status %d, want 5 (paused)", campaign.Status)
	}

	// 3. Add a quota: 200 women aged 25 to 34.
	gender := buyerclient.QuotaQualification{QuestionId: 43, PreCodes: preCodes(t, 2)}
	age := buyerclient.QuotaQualification{QuestionId: 42, PreCodes: preCodes(t, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34)}
	name, num := "Women 25-34", 200
	quota, err := buyer.CreateQuotaWithResponse(ctx, campaign.Id, nil, buyerclient.QuotaCreate{Name: &name, NumRespondents: num,
		CampaignQualifications: []buyerclient.QuotaQualification{gender, age}})
	if err != nil {
		t.Fatal(err)
	}
	status("create quota", quota.StatusCode(), 201, quota.Body)

	// 4. Activate it.
	active := buyerclient.CampaignUpdateStatus(2)
	updated, err := buyer.UpdateCampaignWithResponse(ctx, campaign.Id, buyerclient.CampaignUpdate{Status: &active})
	if err != nil {
		t.Fatal(err)
	}
	status("activate", updated.StatusCode(), 200, updated.Body)

	// 5. Read it back, with its quotas.
	shown, err := buyer.GetCampaignWithResponse(ctx, campaign.Id)
	if err != nil {
		t.Fatal(err)
	}
	status("show campaign", shown.StatusCode(), 200, shown.Body)
	if shown.JSON200.Status != 2 || len(shown.JSON200.CampaignQuotas) != 1 || shown.JSON200.CampaignQuotas[0].NumRespondents != 200 {
		t.Fatalf("show campaign: status %d, quotas %+v", shown.JSON200.Status, shown.JSON200.CampaignQuotas)
	}

	// 6. The partner impanels a woman of 30 and asks for her offers.
	ts := time.Now().Unix()
	imp, err := partner.ImpanelWithResponse(ctx, &supplyclient.ImpanelParams{XUserIdentifier: user}, supplyclient.ImpanelRequest{
		CountryId: 1, Ts: int(ts), Sech: supply.Sech(pubSecret, user, ts),
		ProfileData: []supplyclient.ProfileAnswer{answer(t, 42, 30), answer(t, 43, 2), answer(t, 45, "94105")}})
	if err != nil {
		t.Fatal(err)
	}
	status("impanel", imp.StatusCode(), 200, imp.Body)
	want := strconv.Itoa(campaign.Id)
	var offer *supplyclient.Offer
	for end := time.Now().Add(15 * time.Second); offer == nil; time.Sleep(50 * time.Millisecond) {
		offers, err := partner.ListOffersWithResponse(ctx, &supplyclient.ListOffersParams{XUserIdentifier: user,
			UserIp: "73.15.20.9", DeviceType: supplyclient.ListOffersParamsDeviceTypeN1})
		if err != nil {
			t.Fatal(err)
		}
		status("offers", offers.StatusCode(), 200, offers.Body)
		for i, o := range offers.JSON200.Surveys {
			if o.Identifier == want {
				offer = &offers.JSON200.Surveys[i]
			}
		}
		if offer == nil && time.Now().After(end) {
			t.Fatalf("campaign %s is not offered: %s", want, offers.Body)
		}
	}

	// 7. Entry: the participant's browser opens the offer_entry_url and goes to the survey.
	entryURL, err := url.Parse(offer.OfferEntryUrl)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := partner.EnterSurveyWithResponse(ctx, &supplyclient.EnterSurveyParams{Token: entryURL.Query().Get("token")})
	if err != nil {
		t.Fatal(err)
	}
	status("entry", entry.StatusCode(), 302, entry.Body)
	survey, err := url.Parse(entry.HTTPResponse.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(survey.String(), "https://survey.example.com/s/coffee?") {
		t.Fatalf("entry redirects to %q, want the buyer's survey", entry.HTTPResponse.Header.Get("Location"))
	}
	tid := survey.Query().Get("tid")

	// 8. The buyer's end link reports a complete, signed with the buyer's api_secret; the
	// participant goes back to the partner with the outcome and reward.
	path := "/router/customers/" + b.CustomerID + "/cps/complete?tid=" + url.QueryEscape(tid)
	m := hmac.New(sha1.New, []byte(b.Secret))
	m.Write([]byte(s.PublicURL + path))
	sig := hex.EncodeToString(m.Sum(nil))
	done, err := partner.CallbackWithResponse(ctx, b.CustomerID, supplyclient.CallbackParamsOutcomeComplete,
		&supplyclient.CallbackParams{Tid: tid, TrSech: &sig})
	if err != nil {
		t.Fatal(err)
	}
	status("callback", done.StatusCode(), 302, done.Body)
	back := done.HTTPResponse.Header.Get("Location")
	if !strings.HasPrefix(back, "https://partner.example/back?app=7&tid="+tid+"&status=complete&reward=") {
		t.Fatalf("the end link redirects to %q, want the partner's redirect URL with status=complete", back)
	}
}

func preCodes(t *testing.T, codes ...int) []buyerclient.QuotaQualification_PreCodes_Item {
	t.Helper()
	out := make([]buyerclient.QuotaQualification_PreCodes_Item, len(codes))
	for i, c := range codes {
		if err := out[i].FromQuotaQualificationPreCodes0(c); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// answer is one impanel answer: an integer (a pre_code or the age) or a text.
func answer(t *testing.T, question int, value any) supplyclient.ProfileAnswer {
	t.Helper()
	var v supplyclient.ProfileAnswer_Values_Item
	var err error
	switch x := value.(type) {
	case int:
		err = v.FromProfileAnswerValues0(x)
	case string:
		err = v.FromProfileAnswerValues1(x)
	}
	if err != nil {
		t.Fatal(err)
	}
	return supplyclient.ProfileAnswer{QuestionId: question, Values: []supplyclient.ProfileAnswer_Values_Item{v}}
}
