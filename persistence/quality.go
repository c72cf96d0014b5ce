package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/quality"
)

// QualityChannel is the NOTIFY channel that tells every serve process a participant's block
// state changed (a block decided or lifted); the payload is the participant id.
const QualityChannel = "switchboard_quality"

// QualitySignal is one piece of evidence against a participant.
type QualitySignal struct {
	ParticipantID int64
	PublisherID   int64
	Kind          string
	Ref           string // makes the signal idempotent per (participant, kind)
	TID           string // the session, for session signals
	Evidence      map[string]any
}

// QualityBlock is a decision: (publisher, user) may not take surveys until ExpiresAt unless
// lifted (UnblockedAt).
type QualityBlock struct {
	ID            int64           `json:"id"`
	ParticipantID int64           `json:"participant_id"`
	PublisherID   int64           `json:"publisher_id"`
	User          string          `json:"user_identifier"`
	RuleClass     string          `json:"rule_class"`
	Evidence      json.RawMessage `json:"evidence"`
	BlockedAt     time.Time       `json:"blocked_at"`
	ExpiresAt     time.Time       `json:"expires_at"`
	UnblockedAt   *time.Time      `json:"unblocked_at"`
	UnblockNote   string          `json:"unblock_note,omitempty"`
}

// Until is when the block stops: its expiry or its lifting, whichever is first.
func (b QualityBlock) Until() time.Time {
	if b.UnblockedAt != nil && b.UnblockedAt.Before(b.ExpiresAt) {
		return *b.UnblockedAt
	}
	return b.ExpiresAt
}

// QualityOutcome is what recording signals did: the signals newly stored (repeats of a
// stored signal are not counted) and the blocks newly decided.
type QualityOutcome struct {
	NewSignals []QualitySignal
	Blocks     []QualityBlock
}

// RecordQualitySignals stores signals (idempotently) and decides blocks, in one transaction.
func (db *QualityStore) RecordQualitySignals(ctx context.Context, pol quality.Policy, sigs []QualitySignal) (QualityOutcome, error) {
	var out QualityOutcome
	if len(sigs) == 0 {
		return out, nil
	}
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = RecordQualitySignalsTx(ctx, tx, pol, sigs)
		return err
	})
	return out, err
}

// RecordQualitySignalsTx is RecordQualitySignals inside tx (e.g. the transaction that rejects
// completes). Each new block NOTIFYs QualityChannel at commit.
func RecordQualitySignalsTx(ctx context.Context, tx pgx.Tx, pol quality.Policy, sigs []QualitySignal) (QualityOutcome, error) {
	pol = pol.WithDefaults()
	var out QualityOutcome
	var touched []int64
	for _, s := range sigs {
		if s.ParticipantID == 0 {
			continue
		}
		ev := s.Evidence
		if ev == nil {
			ev = map[string]any{}
		}
		evJSON, err := json.Marshal(ev)
		if err != nil {
			return out, err
		}
		var tid *string
		if s.TID != "" {
			tid = &s.TID
		}
		tag, err := tx.Exec(ctx, `INSERT INTO quality_signals (participant_id, publisher_id, kind, rule_class, ref, tid, evidence)
			SELECT $1, COALESCE(NULLIF($2::bigint, 0), p.publisher_id), $3, $4, $5, $6, $7 FROM participants p WHERE p.id = $1
			ON CONFLICT (participant_id, kind, ref) DO NOTHING`,
			s.ParticipantID, s.PublisherID, s.Kind, quality.SignalClass(s.Kind), s.Ref, tid, evJSON)
		if err != nil {
			return out, err
		}
		if tag.RowsAffected() == 1 {
			out.NewSignals = append(out.NewSignals, s)
			if !slices.Contains(touched, s.ParticipantID) {
				touched = append(touched, s.ParticipantID)
			}
		}
	}
	for _, id := range touched {
		b, ok, err := decideBlock(ctx, tx, pol, id)
		if err != nil {
			return out, err
		}
		if ok {
			out.Blocks = append(out.Blocks, b)
		}
	}
	return out, nil
}

// decideBlock blocks participant id when its counted signals of a rule class reach the
// class's threshold and it is not blocked already.
func decideBlock(ctx context.Context, tx pgx.Tx, pol quality.Policy, id int64) (QualityBlock, bool, error) {
	// One decision at a time per participant, across processes.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(730045101, hashint8($1))`, id); err != nil {
		return QualityBlock{}, false, err
	}
	var active bool
	var since time.Time
	if err := tx.QueryRow(ctx, `SELECT
			COALESCE(bool_or(unblocked_at IS NULL AND expires_at > now()), false),
			COALESCE(greatest(max(blocked_at), max(unblocked_at)), 'epoch'::timestamptz)
		FROM quality_blocks WHERE participant_id = $1`, id).Scan(&active, &since); err != nil {
		return QualityBlock{}, false, err
	}
	if active {
		return QualityBlock{}, false, nil
	}
	rows, err := tx.Query(ctx, `SELECT rule_class, count(*)::int, jsonb_agg(jsonb_build_object(
			'kind', kind, 'ref', ref, 'tid', tid, 'evidence', evidence, 'at', created_at) ORDER BY created_at, id)
		FROM quality_signals WHERE participant_id = $1 AND created_at > $2 AND created_at > now() - $3::interval
		GROUP BY rule_class`, id, since, strconv.FormatInt(int64(pol.Window/time.Second), 10)+" seconds")
	if err != nil {
		return QualityBlock{}, false, err
	}
	counts := map[string]int{}
	evidence := map[string]json.RawMessage{}
	for rows.Next() {
		var class string
		var n int
		var ev []byte
		if err := rows.Scan(&class, &n, &ev); err != nil {
			rows.Close()
			return QualityBlock{}, false, err
		}
		counts[class], evidence[class] = n, ev
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return QualityBlock{}, false, err
	}
	class := pol.Decide(counts)
	if class == "" {
		return QualityBlock{}, false, nil
	}
	ev, err := json.Marshal(map[string]any{"rule_class": class, "signals": evidence[class], "signal_count": counts[class]})
	if err != nil {
		return QualityBlock{}, false, err
	}
	b := QualityBlock{ParticipantID: id, RuleClass: class}
	err = tx.QueryRow(ctx, `INSERT INTO quality_blocks (participant_id, publisher_id, user_identifier, rule_class, evidence, expires_at)
		SELECT p.id, p.publisher_id, p.user_identifier, $2, $3, now() + $4::interval FROM participants p WHERE p.id = $1
		RETURNING id, publisher_id, user_identifier, evidence, blocked_at, expires_at`,
		id, class, ev, strconv.FormatInt(int64(pol.BlockFor/time.Second), 10)+" seconds").
		Scan(&b.ID, &b.PublisherID, &b.User, &b.Evidence, &b.BlockedAt, &b.ExpiresAt)
	if err != nil {
		return QualityBlock{}, false, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, QualityChannel, strconv.FormatInt(id, 10)); err != nil {
		return QualityBlock{}, false, err
	}
	return b, true, nil
}

const qualityBlockColumns = `id, participant_id, publisher_id, user_identifier, rule_class, evidence, blocked_at, expires_at,
	unblocked_at, COALESCE(unblock_note, '')`

func scanQualityBlock(row pgx.Row) (QualityBlock, error) {
	var b QualityBlock
	err := row.Scan(&b.ID, &b.ParticipantID, &b.PublisherID, &b.User, &b.RuleClass, &b.Evidence, &b.BlockedAt,
		&b.ExpiresAt, &b.UnblockedAt, &b.UnblockNote)
	return b, err
}

// RecentQualityBlocks returns, per participant, the latest block that is active or ended
// within `ended` (entry refuses tokens issued before a block for as long as they live).
func (db *QualityStore) RecentQualityBlocks(ctx context.Context, ended time.Duration) ([]QualityBlock, error) {
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT ON (participant_id) `+qualityBlockColumns+` FROM quality_blocks
		WHERE least(expires_at, COALESCE(unblocked_at, 'infinity')) > now() - $1::interval
		ORDER BY participant_id, blocked_at DESC, id DESC`, strconv.FormatInt(int64(ended/time.Second), 10)+" seconds")
	if err != nil {
		return nil, classify(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (QualityBlock, error) { return scanQualityBlock(r) })
	return out, classify(err)
}

// LatestQualityBlock returns the participant's latest block; ok is false when it has none.
func (db *QualityStore) LatestQualityBlock(ctx context.Context, participantID int64) (QualityBlock, bool, error) {
	b, err := scanQualityBlock(db.Pool.QueryRow(ctx, `SELECT `+qualityBlockColumns+` FROM quality_blocks
		WHERE participant_id = $1 ORDER BY blocked_at DESC, id DESC LIMIT 1`, participantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return b, false, nil
	}
	return b, err == nil, classify(err)
}

// QualityReport is what an operator sees of one participant.
type QualityReport struct {
	PublisherID   int64          `json:"publisher_id"`
	User          string         `json:"user_identifier"`
	ParticipantID int64          `json:"participant_id"`
	Blocked       bool           `json:"blocked"`
	Block         *QualityBlock  `json:"active_block"`
	Blocks        []QualityBlock `json:"blocks"`
	Signals       []StoredSignal `json:"signals"`
}

// StoredSignal is a signal as stored.
type StoredSignal struct {
	Kind      string          `json:"kind"`
	RuleClass string          `json:"rule_class"`
	Ref       string          `json:"ref"`
	TID       string          `json:"tid,omitempty"`
	Evidence  json.RawMessage `json:"evidence"`
	At        time.Time       `json:"at"`
}

// QualityReportOf reads the decisions and the latest 200 signals of (publisher, user).
func (db *QualityStore) QualityReportOf(ctx context.Context, publisherID int64, user string) (QualityReport, error) {
	r := QualityReport{PublisherID: publisherID, User: user, Blocks: []QualityBlock{}, Signals: []StoredSignal{}}
	err := db.Pool.QueryRow(ctx, `SELECT id FROM participants WHERE publisher_id = $1 AND user_identifier = $2`,
		publisherID, user).Scan(&r.ParticipantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fault.NotFound("no participant " + strconv.Quote(user) + " of publisher " + strconv.FormatInt(publisherID, 10))
	} else if err != nil {
		return r, classify(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT `+qualityBlockColumns+`, unblocked_at IS NULL AND expires_at > now()
		FROM quality_blocks WHERE participant_id = $1 ORDER BY blocked_at DESC, id DESC`, r.ParticipantID)
	if err != nil {
		return r, classify(err)
	}
	for rows.Next() {
		var b QualityBlock
		var active bool
		if err := rows.Scan(&b.ID, &b.ParticipantID, &b.PublisherID, &b.User, &b.RuleClass, &b.Evidence, &b.BlockedAt,
			&b.ExpiresAt, &b.UnblockedAt, &b.UnblockNote, &active); err != nil {
			rows.Close()
			return r, classify(err)
		}
		if active && r.Block == nil {
			r.Blocked = true
			bb := b
			r.Block = &bb
		}
		r.Blocks = append(r.Blocks, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r, classify(err)
	}
	rows, err = db.Pool.Query(ctx, `SELECT kind, rule_class, ref, COALESCE(tid, ''), evidence, created_at FROM quality_signals
		WHERE participant_id = $1 ORDER BY created_at DESC, id DESC LIMIT 200`, r.ParticipantID)
	if err != nil {
		return r, classify(err)
	}
	sigs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoredSignal, error) {
		var s StoredSignal
		err := row.Scan(&s.Kind, &s.RuleClass, &s.Ref, &s.TID, &s.Evidence, &s.At)
		return s, err
	})
	if err != nil {
		return r, classify(err)
	}
	r.Signals = append(r.Signals, sigs...)
	return r, nil
}

// UnblockParticipant lifts the active blocks of (publisher, user) and NOTIFYs every process.
// Signals recorded before the lifting no longer count. It returns the blocks lifted.
func (db *QualityStore) UnblockParticipant(ctx context.Context, publisherID int64, user, note string) ([]QualityBlock, error) {
	var out []QualityBlock
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM participants WHERE publisher_id = $1 AND user_identifier = $2`,
			publisherID, user).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFound("no participant " + strconv.Quote(user) + " of publisher " + strconv.FormatInt(publisherID, 10))
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(730045101, hashint8($1))`, id); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE quality_blocks SET unblocked_at = now(), unblock_note = NULLIF($2, '')
			WHERE participant_id = $1 AND unblocked_at IS NULL AND expires_at > now() RETURNING `+qualityBlockColumns, id, note)
		if err != nil {
			return err
		}
		if out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (QualityBlock, error) { return scanQualityBlock(r) }); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, QualityChannel, strconv.FormatInt(id, 10))
		return err
	})
	return out, err
}

// sightingRows feeds a batch of sightings to COPY. Each row's values point into the batch,
// so that handing them over boxes nothing.
type sightingRows struct {
	batch []DeviceSighting
	i     int
	row   [4]any
}

func (r *sightingRows) Next() bool { r.i++; return r.i <= len(r.batch) }

func (r *sightingRows) Values() ([]any, error) {
	s := &r.batch[r.i-1]
	r.row = [4]any{&s.PublisherID, &s.DeviceID, &s.User, &s.At}
	return r.row[:], nil
}

func (r *sightingRows) Err() error { return nil }

// DeviceSighting is one (publisher, device, user) seen at unix time At.
type DeviceSighting struct {
	PublisherID int64
	DeviceID    string
	User        string
	At          int64
}

// SharedDevice is a device seen with more users of its publisher than allowed.
type SharedDevice struct {
	PublisherID int64
	DeviceID    string
	Users       []string
}

// maxEvidenceUsers bounds the users listed in one shared-device signal's evidence.
const maxEvidenceUsers = 50

// RecordDeviceSightings stores sightings and applies the shared-device rule to the devices
// they name: a device seen with more than maxUsers user identifiers of its publisher within
// 24 hours gives each of those users that is a participant a shared_device signal.
func (db *QualityStore) RecordDeviceSightings(ctx context.Context, pol quality.Policy, batch []DeviceSighting, maxUsers int) ([]SharedDevice, QualityOutcome, error) {
	var out QualityOutcome
	var shared []SharedDevice
	if len(batch) == 0 {
		return nil, out, nil
	}
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		// The batch travels by COPY into a session-local table rather than as array
		// parameters: a flush of 100k sightings encoded as parameters built messages of
		// megabytes twice over (pgx does not keep a large send buffer), most of what the
		// serving process allocated while answering offers.
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS device_sightings_in
			(p bigint, d text, u text, at bigint) ON COMMIT DELETE ROWS`); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", "device_sightings_in"}, []string{"p", "d", "u", "at"},
			&sightingRows{batch: batch}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO quality_device_sightings AS s (publisher_id, device_id, user_identifier, last_seen)
			SELECT t.p, t.d, t.u, to_timestamp(max(t.at)) FROM pg_temp.device_sightings_in AS t
			WHERE EXISTS (SELECT 1 FROM publishers WHERE id = t.p)
			GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
			ON CONFLICT (publisher_id, device_id, user_identifier) DO UPDATE SET last_seen = greatest(s.last_seen, excluded.last_seen)`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `WITH t AS (SELECT DISTINCT p, d FROM pg_temp.device_sightings_in)
			SELECT s.publisher_id, s.device_id, array_agg(s.user_identifier ORDER BY s.user_identifier)
			FROM quality_device_sightings s JOIN t ON s.publisher_id = t.p AND s.device_id = t.d
			WHERE s.last_seen > now() - interval '24 hours'
			GROUP BY 1, 2 HAVING count(*) > $1`, maxUsers)
		if err != nil {
			return err
		}
		shared, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (SharedDevice, error) {
			var s SharedDevice
			err := r.Scan(&s.PublisherID, &s.DeviceID, &s.Users)
			return s, err
		})
		if err != nil || len(shared) == 0 {
			return err
		}
		var sigs []QualitySignal
		for _, sd := range shared {
			rows, err := tx.Query(ctx, `SELECT id FROM participants WHERE publisher_id = $1 AND user_identifier = ANY($2) ORDER BY id`,
				sd.PublisherID, sd.Users)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			listed := sd.Users
			if len(listed) > maxEvidenceUsers {
				listed = listed[:maxEvidenceUsers]
			}
			for _, id := range ids {
				sigs = append(sigs, QualitySignal{ParticipantID: id, PublisherID: sd.PublisherID, Kind: quality.SignalSharedDevice,
					Ref: "device:" + sd.DeviceID, Evidence: map[string]any{"device_id": sd.DeviceID, "user_count": len(sd.Users),
						"users": listed, "within_hours": 24}})
			}
		}
		out, err = RecordQualitySignalsTx(ctx, tx, pol, sigs)
		return err
	})
	return shared, out, err
}

// PruneQualityHistory deletes device sightings older than 24 hours and impanel history older
// than 300 days.
func (db *QualityStore) PruneQualityHistory(ctx context.Context) error {
	if _, err := db.Pool.Exec(ctx, `DELETE FROM quality_device_sightings WHERE last_seen < now() - interval '25 hours'`); err != nil {
		return classify(err)
	}
	_, err := db.Pool.Exec(ctx, `DELETE FROM quality_impanels WHERE at < now() - interval '301 days'`)
	return classify(err)
}

// speederSQL is the export expression that says whether session s was marked a speeder.
const speederSQL = `quality_speeder(s.tid)`

// speederText formats the speeder column.
func speederText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// ColumnSpeeder is the results column that says whether the complete was a speeder
// ("true"/"false").
const ColumnSpeeder ColumnKind = 100

// speederColumn is the last column of a campaign's results.
var speederColumn = ResultColumn{ID: "speeder", Title: "Speeder (completed implausibly fast)", Kind: ColumnSpeeder}
