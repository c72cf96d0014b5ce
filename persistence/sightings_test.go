package persistence_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
)

// TestDeviceSightingsKnownPublishersOnly checks that sightings are stored for publishers
// that exist and dropped for any other, which the insert itself ensures: the table has no
// foreign key to publishers, whose row-by-row check cost a sixth of the insert.
func TestDeviceSightingsKnownPublishersOnly(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	pub := newPublisher(t, db)
	batch := []persistence.DeviceSighting{
		{PublisherID: pub, DeviceID: "D1", User: "u1", At: 1_800_000_000},
		{PublisherID: pub + 1000, DeviceID: "D1", User: "u2", At: 1_800_000_000},
	}
	if _, _, err := db.Quality.RecordDeviceSightings(ctx, quality.Policy{}.WithDefaults(), batch, 5); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT publisher_id, user_identifier FROM quality_device_sightings`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var p int64
		var u string
		if err := rows.Scan(&p, &u); err != nil {
			t.Fatal(err)
		}
		if p != pub {
			t.Errorf("sighting stored for unknown publisher %d", p)
		}
		got = append(got, u)
	}
	if len(got) != 1 || got[0] != "u1" {
		t.Errorf("sightings stored for users %v, want [u1]", got)
	}
	var fks int
	err = db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint
		WHERE conrelid = 'quality_device_sightings'::regclass AND contype = 'f'`).Scan(&fks)
	if err != nil || fks != 0 {
		t.Errorf("quality_device_sightings has %d foreign keys (%v), want none", fks, err)
	}
}

// TestDeviceSightingsSharedDevice: the shared-device rule sees the sightings of earlier
// flushes (a fourth user a flush later makes the device shared) and each flush reports
// only the devices of its own batch: the batch's staging table is emptied at every
// commit, so a later flush on the same connection does not report the device again.
func TestDeviceSightingsSharedDevice(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	pub := newPublisher(t, db)
	pol := quality.Policy{}.WithDefaults()
	at := time.Now().Unix()
	flush := func(batch ...persistence.DeviceSighting) []persistence.SharedDevice {
		t.Helper()
		shared, _, err := db.Quality.RecordDeviceSightings(ctx, pol, batch, 3)
		if err != nil {
			t.Fatal(err)
		}
		return shared
	}
	seen := func(dev, user string) persistence.DeviceSighting {
		return persistence.DeviceSighting{PublisherID: pub, DeviceID: dev, User: user, At: at}
	}
	if got := flush(seen("D", "u1"), seen("D", "u2"), seen("D", "u3"), seen("D", "u1")); len(got) != 0 {
		t.Fatalf("three users on a device reported shared: %+v", got)
	}
	got := flush(seen("D", "u4"))
	if len(got) != 1 || got[0].DeviceID != "D" || !slices.Equal(got[0].Users, []string{"u1", "u2", "u3", "u4"}) {
		t.Fatalf("a fourth user a flush later: shared %+v, want D with u1-u4", got)
	}
	for i := range 8 { // the pool's connections in turn
		if got := flush(seen("E"+strconv.Itoa(i), "u1")); len(got) != 0 {
			t.Fatalf("flush %d of another device reported %+v", i, got)
		}
	}
}
