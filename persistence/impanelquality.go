package persistence

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/quality"
)

// ImpanelQuality is what the profile rules need to know of one impanel.
type ImpanelQuality struct {
	ParticipantID int64
	PublisherID   int64
	CountryID     int32
	Age           *int32 // nil: the impanel did not carry AGE
	Gender        *int32 // nil: the impanel did not carry GENDER (its first pre_code otherwise)
}

// Windows of the profile rules.
const (
	multiCountryWindow = 24 * time.Hour
	ageWindow          = 300 * 24 * time.Hour
)

// RecordImpanelQuality logs an impanel and applies the profile rules to the participant's
// history: more than one country within 24 hours (duplicates); AGE moved backwards, or up by
// more than one year, against any AGE given within 300 days; GENDER changed more than once
// (implausible profile). Signals and decisions are stored as RecordQualitySignals does.
func (db *QualityStore) RecordImpanelQuality(ctx context.Context, pol quality.Policy, in ImpanelQuality) (QualityOutcome, error) {
	var out QualityOutcome
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(730045102, hashint8($1))`, in.ParticipantID); err != nil {
			return err
		}
		hist, err := impanelHistory(ctx, tx, in.ParticipantID)
		if err != nil {
			return err
		}
		var logID int64
		var now time.Time
		if err := tx.QueryRow(ctx, `INSERT INTO quality_impanels (participant_id, country_id, age, gender)
			VALUES ($1, $2, $3, $4) RETURNING id, at`, in.ParticipantID, in.CountryID, in.Age, in.Gender).Scan(&logID, &now); err != nil {
			return err
		}
		ref := "impanel:" + strconv.FormatInt(logID, 10)
		out, err = RecordQualitySignalsTx(ctx, tx, pol, impanelSignals(in, hist, now, ref))
		return err
	})
	return out, err
}

// impanelLog is one logged impanel of a participant.
type impanelLog struct {
	id      int64
	country int32
	age     *int32
	gender  *int32
	at      time.Time
}

// impanelHistory reads the participant's logged impanels, oldest first.
func impanelHistory(ctx context.Context, tx pgx.Tx, participantID int64) ([]impanelLog, error) {
	rows, err := tx.Query(ctx, `SELECT id, country_id, age, gender, at FROM quality_impanels
			WHERE participant_id = $1 ORDER BY at, id`, participantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (impanelLog, error) {
		var l impanelLog
		err := r.Scan(&l.id, &l.country, &l.age, &l.gender, &l.at)
		return l, err
	})
}

// impanelSignals applies the profile rules to the impanel in, logged at now as ref, against
// the participant's history hist.
func impanelSignals(in ImpanelQuality, hist []impanelLog, now time.Time, ref string) []QualitySignal {
	var sigs []QualitySignal
	if s, ok := multiCountrySignal(in, hist, now); ok {
		sigs = append(sigs, s)
	}
	if s, ok := ageSignal(in, hist, now, ref); ok {
		sigs = append(sigs, s)
	}
	if s, ok := genderSignal(in, hist, ref); ok {
		sigs = append(sigs, s)
	}
	return sigs
}

// multiCountrySignal signals more than one country within 24 hours.
func multiCountrySignal(in ImpanelQuality, hist []impanelLog, now time.Time) (QualitySignal, bool) {
	countries := []int32{in.CountryID}
	for _, h := range hist {
		if now.Sub(h.at) <= multiCountryWindow && !slices.Contains(countries, h.country) {
			countries = append(countries, h.country)
		}
	}
	if len(countries) <= 1 {
		return QualitySignal{}, false
	}
	slices.Sort(countries)
	parts := make([]string, len(countries))
	for i, c := range countries {
		parts[i] = strconv.Itoa(int(c))
	}
	return QualitySignal{ParticipantID: in.ParticipantID, PublisherID: in.PublisherID, Kind: quality.SignalMultiCountry,
		Ref: "countries:" + strings.Join(parts, ","), Evidence: map[string]any{"country_ids": countries, "within_hours": 24}}, true
}

// ageSignal signals an AGE below, or more than one year above, an AGE given within 300
// days (the latest such, as evidence).
func ageSignal(in ImpanelQuality, hist []impanelLog, now time.Time, ref string) (QualitySignal, bool) {
	if in.Age == nil {
		return QualitySignal{}, false
	}
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		if h.age == nil || now.Sub(h.at) > ageWindow {
			continue
		}
		if *in.Age < *h.age || *in.Age > *h.age+1 {
			return QualitySignal{ParticipantID: in.ParticipantID, PublisherID: in.PublisherID,
				Kind: quality.SignalImplausibleAge, Ref: ref, Evidence: map[string]any{
					"previous_age": *h.age, "previous_at": h.at, "age": *in.Age}}, true
		}
	}
	return QualitySignal{}, false
}

// genderSignal signals the second GENDER change over the whole history, and each after:
// by the impanel that makes one.
func genderSignal(in ImpanelQuality, hist []impanelLog, ref string) (QualitySignal, bool) {
	if in.Gender == nil {
		return QualitySignal{}, false
	}
	var last *int32
	flips := 0
	for _, h := range hist {
		if h.gender == nil {
			continue
		}
		if last != nil && *last != *h.gender {
			flips++
		}
		last = h.gender
	}
	if last != nil && *last != *in.Gender && flips+1 > 1 {
		return QualitySignal{ParticipantID: in.ParticipantID, PublisherID: in.PublisherID,
			Kind: quality.SignalImplausibleGender, Ref: ref, Evidence: map[string]any{"changes": flips + 1, "gender": *in.Gender}}, true
	}
	return QualitySignal{}, false
}
