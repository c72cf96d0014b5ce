package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/engine"
)

// ParticipantChannel is the NOTIFY channel that tells every serve process a participant was
// impaneled or updated; the payload is "<participant id> <origin>", origin naming the process
// that wrote it (so that it can skip its own notifications).
const ParticipantChannel = "switchboard_participant"

// ProfileAnswer is one stored answer: pre_codes of a select question or AGE (Codes), or the
// text of a text question (Texts, one value).
type ProfileAnswer struct {
	QuestionID int32
	Codes      []int32
	Texts      []string
}

// Impanel is one validated impanel request.
type Impanel struct {
	PublisherID int64
	User        string
	CountryID   int32
	Profile     []ProfileAnswer
	// Attributes is the attributes_hash (string, number or boolean values), nil when the
	// request carried none. Its keys are merged into the stored ones.
	Attributes map[string]any
}

// PanelParticipant is a participant as the in-memory panel takes it.
type PanelParticipant struct {
	PublisherID int64
	User        string
	LastActive  int64 // unix seconds
	engine.Participant
}

// profileJSON encodes answers in the stored form {"<question id>": [values]}: select and AGE
// answers as integers, text answers as strings.
func profileJSON(answers []ProfileAnswer) ([]byte, error) {
	m := make(map[string]any, len(answers))
	for _, a := range answers {
		k := strconv.Itoa(int(a.QuestionID))
		if a.Texts != nil {
			m[k] = a.Texts
		} else {
			m[k] = a.Codes
		}
	}
	return json.Marshal(m)
}

// parseProfile turns the stored profile into engine answers (texts are normalized later by
// Panel.Upsert). Values of an unexpected shape are skipped.
func parseProfile(raw []byte) ([]engine.Answer, error) {
	var m map[string][]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("participant profile: %w", err)
	}
	out := make([]engine.Answer, 0, len(m))
	for k, vals := range m {
		q, err := strconv.ParseInt(k, 10, 32)
		if err != nil || len(vals) == 0 {
			continue
		}
		a := engine.Answer{QuestionID: int32(q)}
		for _, v := range vals {
			if len(v) > 0 && v[0] == '"' {
				var s string
				if json.Unmarshal(v, &s) == nil && a.Text == "" {
					a.Text = s
				}
				continue
			}
			var n int32
			if json.Unmarshal(v, &n) == nil {
				a.Codes = append(a.Codes, n)
			}
		}
		if a.Text != "" || len(a.Codes) > 0 {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b engine.Answer) int { return int(a.QuestionID) - int(b.QuestionID) })
	return out, nil
}

// ImpanelParticipant stores an impanel in one transaction: a new participant is inserted
// (first reports the request as a first impanel and may refuse it, e.g. for a missing
// required answer), a known one has the answers it carries replaced, its attributes merged,
// its country and last activity updated. A NOTIFY on ParticipantChannel with origin goes out
// at commit. It returns the participant as stored, with its entry history.
func (db *DB) ImpanelParticipant(ctx context.Context, in Impanel, origin string, first func() error) (PanelParticipant, error) {
	prof, err := profileJSON(in.Profile)
	if err != nil {
		return PanelParticipant{}, err
	}
	var attrs []byte
	if in.Attributes != nil {
		if attrs, err = json.Marshal(in.Attributes); err != nil {
			return PanelParticipant{}, err
		}
	}
	out := PanelParticipant{PublisherID: in.PublisherID, User: in.User}
	err = db.Tx(ctx, func(tx pgx.Tx) error {
		var stored []byte
		var last time.Time
		for attempt := 0; ; attempt++ {
			err := tx.QueryRow(ctx, `UPDATE participants SET
					profile = profile || $3::jsonb,
					attributes = CASE WHEN $4::jsonb IS NULL THEN attributes ELSE attributes || $4::jsonb END,
					country_id = $5, updated_at = now(), last_active_at = now()
				WHERE publisher_id = $1 AND user_identifier = $2
				RETURNING id, country_id, profile, last_active_at`,
				in.PublisherID, in.User, prof, attrs, in.CountryID).Scan(&out.ID, &out.CountryID, &stored, &last)
			if err == nil {
				break
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if attempt > 0 {
				return errors.New("participant vanished during impanel")
			}
			if err := first(); err != nil {
				return err
			}
			if attrs == nil {
				attrs = []byte("{}")
			}
			err = tx.QueryRow(ctx, `INSERT INTO participants (publisher_id, user_identifier, country_id, profile, attributes)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT (publisher_id, user_identifier) DO NOTHING
				RETURNING id, country_id, profile, last_active_at`,
				in.PublisherID, in.User, in.CountryID, prof, attrs).Scan(&out.ID, &out.CountryID, &stored, &last)
			if err == nil {
				break
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			// A concurrent first impanel inserted the row: update it instead.
		}
		out.LastActive = last.Unix()
		if out.Answers, err = parseProfile(stored); err != nil {
			return err
		}
		if out.Entries, err = loadEntries(ctx, tx, out.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, ParticipantChannel, strconv.FormatInt(out.ID, 10)+" "+origin)
		return err
	})
	if err != nil {
		return PanelParticipant{}, err
	}
	return out, nil
}

// loadEntries reads a participant's entry history: the last entry per campaign.
func loadEntries(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, id int64) ([]engine.Entry, error) {
	rows, err := q.Query(ctx, `SELECT campaign_id, extract(epoch FROM max(entered_at))::bigint FROM sessions
		WHERE participant_id = $1 AND NOT is_test GROUP BY campaign_id ORDER BY campaign_id`, id)
	if err != nil {
		return nil, err
	}
	var out []engine.Entry
	for rows.Next() {
		var e engine.Entry
		if err := rows.Scan(&e.CampaignID, &e.At); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, e)
	}
	rows.Close()
	return out, rows.Err()
}

// participantColumns are the columns scanParticipant and profileScratch.decodeRow read, in
// this order.
const participantColumns = `id, publisher_id, user_identifier, country_id, profile,
	extract(epoch FROM last_active_at)::bigint`

func scanParticipant(row pgx.Row) (PanelParticipant, error) {
	var p PanelParticipant
	var prof []byte
	if err := row.Scan(&p.ID, &p.PublisherID, &p.User, &p.CountryID, &prof, &p.LastActive); err != nil {
		return p, err
	}
	if answers, ok := parseProfileText(prof); ok {
		p.Answers = answers
		return p, nil
	}
	var err error
	p.Answers, err = parseProfile(prof)
	return p, err
}

// ParticipantByID loads one participant with its entry history.
func (db *DB) ParticipantByID(ctx context.Context, id int64) (PanelParticipant, error) {
	return db.loadParticipant(ctx, `WHERE id = $1`, id)
}

// ParticipantByUser loads the participant of (publisher, user identifier) with its entries.
func (db *DB) ParticipantByUser(ctx context.Context, publisherID int64, user string) (PanelParticipant, error) {
	return db.loadParticipant(ctx, `WHERE publisher_id = $1 AND user_identifier = $2`, publisherID, user)
}

func (db *DB) loadParticipant(ctx context.Context, where string, args ...any) (PanelParticipant, error) {
	p, err := scanParticipant(db.Pool.QueryRow(ctx, `SELECT `+participantColumns+` FROM participants `+where, args...))
	if err != nil {
		return p, classify(err)
	}
	if p.Entries, err = loadEntries(ctx, db.Pool, p.ID); err != nil {
		return p, classify(err)
	}
	return p, nil
}

// LoadActiveParticipants streams every participant active since `since` to fn, then their
// entry history to entry (one call per participant and campaign: the last entry).
//
// To load millions quickly, a large table is read in several streams at once (one
// connection each, over consecutive ranges of its pages, all in one snapshot so that a row
// an update moves during the load is read once) and each row is decoded in place: fn is
// called from several goroutines, one call at a time; p's User and answer texts point into
// a connection's read buffer and its answers into buffers reused for the next row, so they
// are valid only while fn runs and fn must copy what it keeps (Panel.Put does).
func (db *DB) LoadActiveParticipants(ctx context.Context, since time.Time,
	fn func(p PanelParticipant) error, entry func(participantID, campaignID, at int64)) error {
	var mu sync.Mutex
	serial := func(p PanelParticipant) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(p)
	}
	return db.LoadActiveParticipantsConcurrently(ctx, since, serial, entry)
}

// LoadActiveParticipantsConcurrently is LoadActiveParticipants for an fn that is safe for
// concurrent use (Panel.Put is): each stream calls it without waiting for the others, so
// that storing millions of participants, not only reading them, uses every core.
func (db *DB) LoadActiveParticipantsConcurrently(ctx context.Context, since time.Time,
	fn func(p PanelParticipant) error, entry func(participantID, campaignID, at int64)) error {
	if err := db.streamParticipants(ctx, since, fn); err != nil {
		return err
	}
	rows, err := db.Pool.Query(ctx, `SELECT s.participant_id, s.campaign_id, extract(epoch FROM max(s.entered_at))::bigint
		FROM sessions s JOIN participants p ON p.id = s.participant_id
		WHERE p.last_active_at >= $1 AND NOT s.is_test GROUP BY 1, 2`, since)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid, cid, at int64
		if err := rows.Scan(&pid, &cid, &at); err != nil {
			return err
		}
		entry(pid, cid, at)
	}
	return classify(rows.Err())
}

// TouchParticipants raises last_active_at of each participant to the matching unix time of
// at (never lowers it), so that the start-up load keeps recently active participants.
func (db *DB) TouchParticipants(ctx context.Context, ids, at []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.Pool.Exec(ctx, `UPDATE participants p SET last_active_at = greatest(p.last_active_at, to_timestamp(t.at))
		FROM unnest($1::bigint[], $2::bigint[]) AS t(id, at) WHERE p.id = t.id`, ids, at)
	return classify(err)
}

// ParseParticipantNotice splits a ParticipantChannel payload into id and origin.
func ParseParticipantNotice(payload string) (id int64, origin string, ok bool) {
	idText, origin, _ := strings.Cut(payload, " ")
	id, err := strconv.ParseInt(idText, 10, 64)
	return id, origin, err == nil && id > 0
}

// EstimateParticipants returns PostgreSQL's estimate of the number of participants
// (pg_class.reltuples, kept by ANALYZE and autovacuum: free to read, unlike a count over
// millions of rows), 0 while the table was never analyzed. The start-up sizes the panel
// from it before the load (engine.Panel.Reserve).
func (db *DB) EstimateParticipants(ctx context.Context) (int, error) {
	var n float64
	err := db.Pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'participants'::regclass`).Scan(&n)
	if err != nil {
		return 0, classify(err)
	}
	return max(0, int(n)), nil
}
