package supply

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

// TestPlaceKeepsAnEntryHeardFirst: a participant announced by another process is read from
// the database; an entry of it is committed after that read and its notice is heard before
// the participant is in the panel (Panel.RecordEntry ignores it). Placing the participant
// must still leave the entry in the panel, as a process loaded from the database holds it.
func TestPlaceKeepsAnEntryHeardFirst(t *testing.T) {
	ctx := context.Background()
	db, err := persistence.Open(ctx, pgtest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, _, err := db.Accounts.CreateBuyer(ctx, "place@example.test", "Buyer", persistence.EnvStaging)
	if err != nil {
		t.Fatal(err)
	}
	name, inc, loi, cl, link := "placed", 50, 10, 1, "https://survey.example/s?tid={ID}"
	c, err := db.Campaigns.CreateCampaign(ctx, b.ID, persistence.CampaignFields{Name: &name, Incidence: &inc,
		LengthOfInterview: &loi, CountryLanguageID: &cl, SupplierLink: &link})
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := db.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Partner", CurrencyName: "coins",
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://partner.example/back", Environment: persistence.EnvStaging})
	if err != nil {
		t.Fatal(err)
	}
	var pid int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile, last_active_at)
		VALUES ($1, 'u1', (SELECT min(id) FROM countries), '{}', now()) RETURNING id`, pub.ID).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	a := &panelMirror{participants: db.Participants, feed: db.Feed, panel: engine.NewPanel(), now: func() int64 { return time.Now().Unix() }}

	p, err := db.Participants.ParticipantByID(ctx, pid) // the notice's read: no entries yet
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour).Unix()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO sessions (tid, campaign_id, buyer_id, publisher_id, participant_id, entered_at)
		VALUES (md5(random()::text), $1, $2, $3, $4, to_timestamp($5))`, c.ID, b.ID, pub.ID, pid, at); err != nil {
		t.Fatal(err)
	}
	if a.panel.RecordEntry(pid, c.ID, at) { // the entry's notice, heard first
		t.Fatal("an unknown participant's entry was recorded")
	}
	if err := a.place(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, ok := a.panel.Get(pub.ID, "u1")
	if !ok {
		t.Fatal("the participant is not in the panel")
	}
	if len(got.Entries) != 1 || got.Entries[0] != (engine.Entry{CampaignID: c.ID, At: at}) {
		t.Fatalf("entries %+v, want the one entry of campaign %d at %d", got.Entries, c.ID, at)
	}
}
