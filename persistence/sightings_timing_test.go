package persistence_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
)

// BenchmarkRecordDeviceSightings measures one flush of 10,000 new device sightings (a
// second of a large market's new devices): the write, the shared-device query and what the
// serving process allocates for them (B/op).
func BenchmarkRecordDeviceSightings(b *testing.B) {
	ctx := context.Background()
	db := migratedDB(b)
	pub := newPublisher(b, db)
	pol := quality.Policy{}.WithDefaults()
	batch := make([]persistence.DeviceSighting, 10_000)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		at := time.Now().Unix()
		for i := range batch {
			batch[i] = persistence.DeviceSighting{PublisherID: pub, DeviceID: "device-" + strconv.Itoa(n), User: "user-" + strconv.Itoa(n), At: at}
			n++
		}
		b.StartTimer()
		if _, _, err := db.Quality.RecordDeviceSightings(ctx, pol, batch, 3); err != nil {
			b.Fatal(err)
		}
	}
}
