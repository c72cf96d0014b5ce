package persistence_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboard/switchboard/persistence"
)

// BenchmarkAdmitBatch measures one batch of 32 admitted entries, as the EntryWriter writes
// them under load (32 campaigns of one quota each, distinct participants): the two round
// trips and what the serving process allocates for them. B/op divided by 32 is the
// admission's garbage per entry, which paces the collector in the entries phases.
func BenchmarkAdmitBatch(b *testing.B) {
	const batch, campaigns, participants = 32, 32, 512
	ctx := context.Background()
	db := migratedDB(b)
	pub := newPublisher(b, db)
	buyer := newBuyer(b, db, "admit-bench@example.test")
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{}); err != nil {
		b.Fatal(err)
	}
	camps, quotas := make([]int64, campaigns), make([]int64, campaigns)
	num := 1 << 30
	for i := range camps {
		camps[i] = newCampaign(b, db, buyer, fmt.Sprintf("Admit %d", i))
		q, err := db.Campaigns.CreateQuota(ctx, buyer, camps[i], persistence.QuotaFields{NumRespondents: &num})
		if err != nil {
			b.Fatal(err)
		}
		quotas[i] = q.ID
	}
	// reentry_interval 0: a participant may enter again at once, so the bench reuses them.
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2, reentry_interval = 0 WHERE buyer_id = $1`, buyer); err != nil {
		b.Fatal(err)
	}
	parts := benchParticipants(b, db, pub, "admit", participants)
	n := 0
	admitBatches(b, db, batch, func(es []persistence.Entry) {
		for i := range es {
			c := n % campaigns
			es[i] = persistence.Entry{TID: fmt.Sprintf("%027x00000", n), CampaignID: camps[c], PublisherID: pub,
				ParticipantID: parts[n%participants], DeviceID: fmt.Sprintf("device-%d", n%participants),
				QuotaIDs: []int64{quotas[c]}, RespondentID: fmt.Sprintf("%016x", n)}
			n++
		}
	})
}

// admitBatches times b.N batches of size entries, each filled by fill, once the tables
// hold some rows and are analyzed, as a serving database's are (serve's analyzer runs
// within a second): otherwise the plans made on the empty tables read them whole, and the
// figure grows with b.N (BenchmarkAdmitBatch: 8 ms a batch at 50 batches, 37 ms at 400).
func admitBatches(b *testing.B, db *persistence.DB, size int, fill func(es []persistence.Entry)) {
	ctx := context.Background()
	es := make([]persistence.Entry, size)
	admit := func() {
		b.StopTimer() // the entries' making is not the admission's time or garbage
		fill(es)
		b.StartTimer()
		out, err := db.AdmitBatch(ctx, es)
		if err != nil {
			b.Fatal(err)
		}
		for i := range out {
			if out[i].Refused != "" {
				b.Fatalf("entry %d refused: %s", i, out[i].Refused)
			}
		}
	}
	for range 100 {
		admit()
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		admit()
	}
}

// BenchmarkAdmitYoungCampaigns measures batches of 1 and 16 entries into campaigns created
// today on a database with a year of monthly partitions of sessions, the sequence in the
// eleventh: what a marketplace a year old asks of the admission, its checks' probes of
// sessions pruned to the latest partitions by the campaigns' floors.
func BenchmarkAdmitYoungCampaigns(b *testing.B) {
	const campaigns, participants = 16, 512
	ctx := context.Background()
	db := migratedDB(b)
	pub := newPublisher(b, db)
	buyer := newBuyer(b, db, "admit-young@example.test")
	if _, err := db.Maintenance.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{Ahead: 12}); err != nil {
		b.Fatal(err)
	}
	ps, err := db.Maintenance.SessionPartitions(ctx)
	if err != nil || len(ps) < 13 {
		b.Fatalf("%d partitions (%v)", len(ps), err)
	}
	// A month of sessions in each partition up to the eleventh, which takes today's.
	const current = 10
	for i := 0; i <= current; i++ {
		if _, err := db.Pool.Exec(ctx, `UPDATE session_partitions SET first_entered_at = now() - make_interval(days => $2)
			WHERE id_from = $1`, ps[i].IDFrom, 2+30*(current-i)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `SELECT setval('sessions_id_seq', $1)`, ps[current].IDFrom); err != nil {
		b.Fatal(err)
	}
	camps, quotas := make([]int64, campaigns), make([]int64, campaigns)
	for i := range camps {
		camps[i], quotas[i] = newActiveCampaign(b, db, buyer, fmt.Sprintf("Young %d", i), 0)
		if _, err := db.Pool.Exec(ctx, `UPDATE campaign_quotas SET num_respondents = 1 << 30 WHERE id = $1`, quotas[i]); err != nil {
			b.Fatal(err)
		}
	}
	parts := benchParticipants(b, db, pub, "young", participants)
	n := 0
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			admitBatches(b, db, batch, func(es []persistence.Entry) {
				for i := range es {
					c := n % campaigns
					es[i] = persistence.Entry{TID: fmt.Sprintf("%027x00000", n), CampaignID: camps[c], PublisherID: pub,
						ParticipantID: parts[n%participants], QuotaIDs: []int64{quotas[c]}, RespondentID: fmt.Sprintf("%016x", n)}
					n++
				}
			})
		})
	}
}

// benchParticipants impanels n participants of partner pub (users prefix-0, prefix-1, …)
// and returns their ids.
func benchParticipants(b *testing.B, db *persistence.DB, pub int64, prefix string, n int) []int64 {
	ids := make([]int64, n)
	for i := range ids {
		p, err := db.Participants.ImpanelParticipant(context.Background(), persistence.Impanel{PublisherID: pub,
			User: fmt.Sprintf("%s-%d", prefix, i), CountryID: 1}, "test", func() error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = p.ID
	}
	return ids
}
