package persistence

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"go.uber.org/zap"

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
func (db *ParticipantStore) ImpanelParticipant(ctx context.Context, in Impanel, origin string, first func() error) (PanelParticipant, error) {
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
func (db *ParticipantStore) ParticipantByID(ctx context.Context, id int64) (PanelParticipant, error) {
	return db.loadParticipant(ctx, `WHERE id = $1`, id)
}

// ParticipantByUser loads the participant of (publisher, user identifier) with its entries.
func (db *ParticipantStore) ParticipantByUser(ctx context.Context, publisherID int64, user string) (PanelParticipant, error) {
	return db.loadParticipant(ctx, `WHERE publisher_id = $1 AND user_identifier = $2`, publisherID, user)
}

// ParticipantEntries reads the entry history of participant id (the latest entry per
// campaign), as ParticipantByID reads it.
func (db *ParticipantStore) ParticipantEntries(ctx context.Context, id int64) ([]engine.Entry, error) {
	es, err := loadEntries(ctx, db.Pool, id)
	return es, classify(err)
}

func (db *ParticipantStore) loadParticipant(ctx context.Context, where string, args ...any) (PanelParticipant, error) {
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
// entry history to entry (see loadEntryHistory: the entries that can still matter, possibly
// several per participant and campaign, the latest of which counts).
//
// To load millions quickly, a large table is read in several streams at once (one
// connection each, sharing the id range in chunks, one statement and snapshot per chunk, so
// that a row an update moves during the load is read once and no snapshot outlives its
// chunk) and each row is decoded in place: fn is
// called from several goroutines, one call at a time; p's User and answer texts point into
// a connection's read buffer and its answers into buffers reused for the next row, so they
// are valid only while fn runs and fn must copy what it keeps (Panel.Put does).
func (db *ParticipantStore) LoadActiveParticipants(ctx context.Context, since time.Time,
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
func (db *ParticipantStore) LoadActiveParticipantsConcurrently(ctx context.Context, since time.Time,
	fn func(p PanelParticipant) error, entry func(participantID, campaignID, at int64)) error {
	_, err := db.LoadPanel(ctx, since, fn, entry)
	return err
}

// LoadPanel is LoadActiveParticipantsConcurrently that also reports what the entry history
// load left out: a relationship created later to one of those campaigns needs its entries
// (HistoryCampaigns, LoadEntriesOf).
func (db *ParticipantStore) LoadPanel(ctx context.Context, since time.Time,
	fn func(p PanelParticipant) error, entry func(participantID, campaignID, at int64)) (EntryHistoryStats, error) {
	started := time.Now()
	var n atomic.Int64
	count := func(p PanelParticipant) error {
		n.Add(1)
		return fn(p)
	}
	if err := db.streamParticipants(ctx, since, count); err != nil {
		return EntryHistoryStats{}, err
	}
	streamed := time.Now()
	var only *time.Time // the entries of the participants active since, when few
	if n.Load() <= fewParticipants {
		only = &since
	}
	st, err := db.loadEntryHistory(ctx, time.Now(), only, entry)
	if err != nil {
		return st, err
	}
	db.log.Info("participants and entry history loaded", zap.Duration("participants_took", streamed.Sub(started)),
		zap.Int("history_campaigns", st.Campaigns), zap.Int("history_left_out", len(st.LeftOut)),
		zap.Int64("history_rows", st.Rows), zap.Duration("history_took", time.Since(streamed)))
	return st, nil
}

// fewParticipants is the most participants a load reads the entry history of participant
// by participant (a reload after a lost connection); above, it reads every session that
// matters, the unloaded participants' ones being ignored by the receiver (Panel.RecordEntry),
// which beats a join of millions.
var fewParticipants int64 = 100_000

// EntryHistoryStats describes an entry-history load.
type EntryHistoryStats struct {
	Campaigns int     // campaigns whose every entry was read
	LeftOut   []int64 // campaigns whose entries were read only within engine.ActivityDays
	Rows      int64   // entries handed to entry
}

// HistoryCampaigns returns those of the given campaigns whose entries can block an offer now
// (historyCampaignsSQL): the ones a start-up load left out that need their entries since.
func (db *ParticipantStore) HistoryCampaigns(ctx context.Context, among []int64) ([]int64, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id FROM (`+historyCampaignsSQL+`) h WHERE id = ANY($1) ORDER BY id`, among)
	if err != nil {
		return nil, classify(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, classify(err)
}

// historyCampaignsSQL lists the campaigns whose entries can still block an offer: every
// campaign that can still be offered (all but 4 Archived and 6 Reconciled, the two statuses
// no campaign leaves: docs/rules.md §4), for its reentry_interval, and every campaign
// related to one of those, for campaign_relationships (docs/rules.md §5.5). Entries into
// other campaigns block nothing; a relationship created later to one of them has its
// entries loaded then (HistoryCampaigns, LoadEntriesOf).
const historyCampaignsSQL = `SELECT id FROM campaigns WHERE status NOT IN (4, 6)
	UNION SELECT r.related_campaign_id FROM campaign_relationships r JOIN campaigns c ON c.id = r.campaign_id
		WHERE c.status NOT IN (4, 6)
	UNION SELECT r.campaign_id FROM campaign_relationships r JOIN campaigns c ON c.id = r.related_campaign_id
		WHERE c.status NOT IN (4, 6)`

// loadEntryHistory hands entry every entry (not a test one) into a campaign that can still
// block an offer (historyCampaignsSQL), and every entry of the last engine.ActivityDays days
// whatever its campaign (entries are activity too: Panel.RecordEntry). Entries into the
// other campaigns, the bulk of a year of sessions, are left out, and the partitions that
// hold only those are not read. The scan names the smaller of the two lists, the campaigns
// kept or those left out (none: no list at all), so that checking each of millions of rows
// against it stays cheap.
//
// The rows are read as stored, not grouped by participant and campaign (the receiver keeps
// the latest: Panel.RecordEntry): grouping ten million rows in PostgreSQL sorted them on
// disk in parallel workers for half a minute, on every core the processes already serving
// share. For the same reason the query runs without parallel workers and without JIT
// compilation (seconds of compiling for one scan).
//
// The sessions are read historyChunk ids at a time, each range in a transaction of its own:
// one snapshot held through a paced read of ten million rows (half a minute) kept every
// version of the rows the serving processes update on each entry (quota counts), and their
// entries slowed while this one joined (the quota lock read 7× the buffers). An entry
// committed in a range already read is not lost: its process announces it
// (EntriesChannel), which this one listens to from its start.
func (db *ParticipantStore) loadEntryHistory(ctx context.Context, now time.Time, only *time.Time, entry func(participantID, campaignID, at int64)) (EntryHistoryStats, error) {
	var st EntryHistoryStats
	since := now.Add(-time.Duration(engine.ActivityDays) * 24 * time.Hour)
	where, args := `true`, []any{}
	var first, last int64 // the ids to read
	err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, historyCampaignsSQL)
		if err != nil {
			return err
		}
		keep, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		// The same snapshot: a campaign created since is in neither list, and its entries
		// are read (none of the lists excludes it).
		rows, err = tx.Query(ctx, `SELECT id FROM campaigns WHERE NOT (id = ANY($1))`, keep)
		if err != nil {
			return err
		}
		drop, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		st.Campaigns, st.LeftOut = len(keep), drop
		switch {
		case len(drop) == 0:
		case len(drop) < len(keep): // every session's campaign exists (nothing deletes campaigns)
			where, args = `(NOT (campaign_id = ANY($1)) OR entered_at >= $2)`, []any{drop, since}
		default:
			where, args = `(campaign_id = ANY($1) OR entered_at >= $2)`, []any{keep, since}
		}
		// Neither kind of entry is older than the oldest kept campaign or the activity
		// window: the partitions of sessions before both are not read (SessionFloorSQL).
		return tx.QueryRow(ctx, `SELECT coalesce(min(id), 0), coalesce(max(id), -1) FROM sessions WHERE id >= `+
			SessionFloorSQL(`LEAST($1::timestamptz, (SELECT min(created_at) FROM campaigns WHERE id = ANY($2)))`),
			since, keep).Scan(&first, &last)
	})
	if err != nil {
		return st, classify(err)
	}
	m := db.meter()
	read := func(where string, args ...any) error {
		return pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			n, err := readEntries(ctx, tx, where, &m, entry, args...)
			st.Rows += n
			return err
		})
	}
	if only != nil {
		// A reload after a lost connection: a few recently active participants, read
		// through their index rather than every session.
		err = read(`id >= $`+strconv.Itoa(len(args)+1)+` AND id <= $`+strconv.Itoa(len(args)+2)+` AND `+where+
			` AND participant_id IN (SELECT id FROM participants WHERE last_active_at >= $`+strconv.Itoa(len(args)+3)+`)`,
			append(args, first, last, *only)...)
		return st, classify(err)
	}
	where = `id >= $` + strconv.Itoa(len(args)+1) + ` AND id < $` + strconv.Itoa(len(args)+2) + ` AND ` + where
	for lo := first; lo <= last && err == nil; lo += historyChunk {
		err = read(where, append(args, lo, lo+historyChunk)...)
	}
	return st, classify(err)
}

// historyChunk is how many session ids one transaction of the entry-history load covers:
// about a second of reading, paced, and one plan made for the campaign list per range.
var historyChunk int64 = 1 << 18

// LoadEntriesOf hands entry every entry (not a test one) into the given campaigns: the
// history a relationship created after the start-up load needs when it names a campaign
// that load left out (loadEntryHistory).
func (db *ParticipantStore) LoadEntriesOf(ctx context.Context, campaignIDs []int64, entry func(participantID, campaignID, at int64)) (int64, error) {
	var n int64
	err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		m := db.meter()
		n, err = readEntries(ctx, tx, `campaign_id = ANY($1)`, &m, entry, campaignIDs)
		return err
	})
	return n, classify(err)
}

// pgEpoch is PostgreSQL's origin of timestamps, in unix seconds (2000-01-01 UTC).
const pgEpoch = 946_684_800

// readEntries streams (participant, campaign, entered_at) of the sessions matching where
// (and not test ones) to entry, decoding the binary row in place, paced by m, and returns
// how many.
func readEntries(ctx context.Context, tx pgx.Tx, where string, m *loadMeter, entry func(participantID, campaignID, at int64), args ...any) (int64, error) {
	// Custom plans: a generic one tests each row against the campaign list parameter one
	// element at a time, where a plan made for the list hashes it (100,000 campaigns: 15 s
	// instead of 40 ms for 65,536 sessions), and the history is read in many ranges.
	if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL jit = off;
		SET LOCAL plan_cache_mode = force_custom_plan`); err != nil {
		return 0, err
	}
	rows, err := tx.Query(ctx, `SELECT participant_id, campaign_id, entered_at FROM sessions
		WHERE NOT is_test AND (`+where+`)`, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	raw := true
	for _, fd := range rows.FieldDescriptions() {
		raw = raw && fd.Format == pgtype.BinaryFormatCode
	}
	var n int64
	for rows.Next() {
		m.row(ctx)
		var pid, cid, at int64
		if v := rows.RawValues(); raw && len(v) == 3 && len(v[0]) == 8 && len(v[1]) == 8 && len(v[2]) == 8 {
			pid = int64(binary.BigEndian.Uint64(v[0]))
			cid = int64(binary.BigEndian.Uint64(v[1]))
			at = pgEpoch + roundedSeconds(int64(binary.BigEndian.Uint64(v[2]))) // microseconds since pgEpoch
		} else {
			var t time.Time
			if err := rows.Scan(&pid, &cid, &t); err != nil {
				return n, err
			}
			at = roundedSeconds(t.UnixMicro()-pgEpoch*1_000_000) + pgEpoch
		}
		entry(pid, cid, at)
		n++
	}
	return n, rows.Err()
}

// roundedSeconds turns microseconds into seconds rounded to the nearest (half up), as
// extract(epoch FROM entered_at)::bigint does in loadEntries for times after 2000.
func roundedSeconds(us int64) int64 {
	us += 500_000
	q := us / 1_000_000
	if us%1_000_000 < 0 {
		q--
	}
	return q
}

// ParticipantUser returns the partner's user identifier of participant id ("" for an id
// no participant has).
func (db *ParticipantStore) ParticipantUser(ctx context.Context, id int64) (string, error) {
	var user string
	err := db.Pool.QueryRow(ctx, `SELECT user_identifier FROM participants WHERE id = $1`, id).Scan(&user)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return user, classify(err)
}

// TouchParticipants records that each participant was active at the matching unix time of
// at, so that the start-up load keeps recently active participants. last_active_at counts
// days: it is raised to at only when it lies before at's UTC day, so it holds a
// participant's first activity of its latest active day and a participant's row is
// rewritten at most once a day however often it asks for offers (each write is a new row
// version and an entry in every index of participants). What reads it reads days: the
// start-up's window and the active days of the panel's activity.
func (db *ParticipantStore) TouchParticipants(ctx context.Context, ids, at []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.Pool.Exec(ctx, `UPDATE participants p SET last_active_at = to_timestamp(t.at)
		FROM unnest($1::bigint[], $2::bigint[]) AS t(id, at)
		WHERE p.id = t.id AND p.last_active_at < to_timestamp(t.at - t.at % 86400)`, ids, at)
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
func (db *ParticipantStore) EstimateParticipants(ctx context.Context) (int, error) {
	var n float64
	err := db.Pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'participants'::regclass`).Scan(&n)
	if err != nil {
		return 0, classify(err)
	}
	return max(0, int(n)), nil
}
