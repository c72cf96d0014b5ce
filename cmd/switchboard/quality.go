package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/supply/quality"
)

// qualityFlags registers the participant-quality settings of serve (docs/quality.md).
func qualityFlags(f flags, cfg *app.Config) {
	q := &cfg.Quality
	f.BoolVar(&q.AllowPrivateIPs, "allow-private-ips", false,
		"accept private, loopback, link-local and documentation addresses as user_ip (testing only)")
	f.StringVar(&q.GeoIPDB, "geoip-db", "", "MaxMind-format country database (.mmdb): refuse offers to IPs outside the participant's country (empty: off)")
	f.IntVar(&q.DuplicateDeviceUsers, "duplicate-device-users", 3,
		"a device seen with more user identifiers of one publisher than this within 24 h is a duplicate")
	f.Float64Var(&cfg.RouterQuality.SpeederFraction, "speeder-fraction", 0.25,
		"a complete faster than this fraction of the length of interview is a speeder (negative: off)")
	f.DurationVar(&q.Policy.BlockFor, "quality-block-for", 30*24*time.Hour, "how long a quality block lasts")
	f.DurationVar(&q.Policy.Window, "quality-window", 30*24*time.Hour, "how long a quality signal counts")
	f.Func("quality-thresholds", "signals per rule class that block, e.g. outcomes=3,speeding=3,duplicates=1,implausible_profile=1 (negative: class off)",
		func(v string) error {
			th, err := quality.ParseThresholds(v)
			if err == nil {
				q.Policy.Thresholds = th
			}
			return err
		})
}

// participantFlags are the flags that name a participant.
func participantFlags(name string) (flags, *string, *string, *int64) {
	f := newFlags(name)
	dbURL := databaseFlag(f)
	user := f.String("user", "", "the participant's user identifier (X-User-Identifier) (required)")
	pub := f.Int64("publisher", 0, "the publisher id (required)")
	return f, dbURL, user, pub
}

// runQualityShow prints a participant's quality decisions and signals as JSON.
func runQualityShow(ctx context.Context, args []string, out io.Writer) error {
	f, dbURL, user, pub := participantFlags("quality show")
	if err := f.parse(args); err != nil {
		return err
	}
	if *user == "" || *pub <= 0 {
		return errors.New("--user and --publisher are required")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := db.Quality.QualityReportOf(ctx, *pub, *user)
	if err != nil {
		return err
	}
	return printJSON(out, r)
}

// runQualityUnblock lifts a participant's quality block on every serve process
// (quality.Unblock).
func runQualityUnblock(ctx context.Context, args []string, out io.Writer) error {
	f, dbURL, user, pub := participantFlags("quality unblock")
	note := f.String("note", "", "why the block is lifted (kept with the decision)")
	if err := f.parse(args); err != nil {
		return err
	}
	if *user == "" || *pub <= 0 {
		return errors.New("--user and --publisher are required")
	}
	db, err := openDB(ctx, *dbURL, newLogger())
	if err != nil {
		return err
	}
	defer db.Close()
	u, err := quality.Unblock(ctx, db.Quality, *pub, *user, *note)
	if err != nil {
		return err
	}
	return printJSON(out, u)
}
