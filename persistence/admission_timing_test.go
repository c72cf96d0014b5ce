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
	if _, err := db.EnsureSessionPartitions(ctx, persistence.PartitionPolicy{}); err != nil {
		b.Fatal(err)
	}
	camps, quotas := make([]int64, campaigns), make([]int64, campaigns)
	num := 1 << 30
	for i := range camps {
		camps[i] = newCampaign(b, db, buyer, fmt.Sprintf("Admit %d", i))
		q, err := db.CreateQuota(ctx, buyer, camps[i], persistence.QuotaFields{NumRespondents: &num})
		if err != nil {
			b.Fatal(err)
		}
		quotas[i] = q.ID
	}
	// reentry_interval 0: a participant may enter again at once, so the bench reuses them.
	if _, err := db.Pool.Exec(ctx, `UPDATE campaigns SET status = 2, reentry_interval = 0 WHERE buyer_id = $1`, buyer); err != nil {
		b.Fatal(err)
	}
	parts := make([]int64, participants)
	for i := range parts {
		p, err := db.ImpanelParticipant(ctx, persistence.Impanel{PublisherID: pub, User: fmt.Sprintf("admit-%d", i), CountryID: 1},
			"test", func() error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		parts[i] = p.ID
	}
	es := make([]persistence.Entry, batch)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for i := range es {
			c := n % campaigns
			es[i] = persistence.Entry{TID: fmt.Sprintf("%027x00000", n), CampaignID: camps[c], PublisherID: pub,
				ParticipantID: parts[n%participants], DeviceID: fmt.Sprintf("device-%d", n%participants),
				QuotaIDs: []int64{quotas[c]}, RespondentID: fmt.Sprintf("%016x", n)}
			n++
		}
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
}
