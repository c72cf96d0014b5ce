package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// ArchiveStaleCampaigns moves to 4 Archived every campaign that has been 3 Complete or
// 6 Reconciled for at least after (docs/rules.md §4: after 90 days), and announces them. It
// returns the ids it moved. The update is conditional on the status, so running it again, or
// in several processes at once, moves each campaign once.
func (db *MaintenanceStore) ArchiveStaleCampaigns(ctx context.Context, after time.Duration) ([]int64, error) {
	return db.moveCampaigns(ctx, StatusArchived, ReasonArchived, `UPDATE campaigns c SET status = $1, status_changed_at = now(), updated_at = now()
		FROM (SELECT id, status FROM campaigns WHERE status IN ($2, $3) AND status_changed_at <= now() - $4::interval FOR UPDATE) old
		WHERE c.id = old.id AND c.status IN ($2, $3)
		RETURNING c.id, old.status::int`, StatusArchived, StatusComplete, StatusReconciled, after)
}

// CompleteFullCampaigns moves those of ids (nil: every campaign) that are active and whose
// non-global quotas are all full (completes, or entries when click-balanced, reach
// num_respondents; at least one such quota) to 3 Complete, and announces them. It returns
// the ids it moved. The quotas are read once, grouped by campaign: over every campaign the
// sweeper's pass read and hashed them twice (an EXISTS and a NOT EXISTS). The two forms are
// two statements, so that the listed one's plan always probes the quotas' campaign index.
func (db *MaintenanceStore) CompleteFullCampaigns(ctx context.Context, ids []int64) ([]int64, error) {
	if ids == nil {
		return db.moveCampaigns(ctx, StatusComplete, ReasonQuotasFull, completeAllFullSQL)
	}
	return db.moveCampaigns(ctx, StatusComplete, ReasonQuotasFull, completeListedFullSQL, ids)
}

// CompleteFullCampaigns's statements, over every campaign and over those listed in $1.
var (
	completeAllFullSQL    = fmt.Sprintf(completeFullSQL, "")
	completeListedFullSQL = fmt.Sprintf(completeFullSQL, "AND q.campaign_id = ANY($1)")
)

// completeFullSQL is CompleteFullCampaigns's statement, %s the quotas' campaign filter.
const completeFullSQL = `UPDATE campaigns c SET status = 3, status_changed_at = now(), completed_at = now(), updated_at = now()
	FROM (SELECT q.campaign_id FROM campaign_quotas q WHERE NOT q.is_global %s
		GROUP BY q.campaign_id
		HAVING bool_and(CASE WHEN q.is_click_balanced THEN q.entries >= q.num_respondents ELSE q.completes >= q.num_respondents END)) f
	WHERE c.id = f.campaign_id AND c.status = 2
	RETURNING c.id, 2`

// moveCampaigns runs update, a status change of campaigns to status to that returns the ids
// it moved with their former status, and in the same transaction announces those campaigns
// (so every process's engine hears of a change exactly when it commits) and stores their
// webhook events, giving reason. The status changes the service makes on its own
// (complete, system paused, archived) are conditional on the current status, so they are
// safe to run again and in several processes at once.
func (db *MaintenanceStore) moveCampaigns(ctx context.Context, to int, reason, update string, args ...any) ([]int64, error) {
	var out []int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, update, args...)
		if err != nil {
			return err
		}
		var events []WebhookEvent
		var id int64
		var old int
		_, err = pgx.ForEachRow(rows, []any{&id, &old}, func() error {
			out = append(out, id)
			events = append(events, statusEvents(id, old, to, reason)...)
			return nil
		})
		if err != nil {
			return err
		}
		if err := EnqueueWebhookEvents(ctx, tx, events); err != nil {
			return err
		}
		return NotifyCampaigns(ctx, tx, out...)
	})
	return out, err
}

// ReleaseStaleSessions takes sessions that got no callback within 2 × LOI + 10 minutes out
// of in_progress, so that they stop holding quota places (a later callback is still
// accepted). It returns the campaigns whose counts moved, and more when some campaign has
// sessions past its window left to look at (call it again).
//
// Each campaign holding places (a quota with in_progress > 0) is read from its mark
// (session_sweep_marks: every session below it has an outcome, was released, or is a test
// one) in id order through its (campaign_id, id) index, at most limit sessions: the held
// ones whose window has passed are released, and the mark moves to the first session whose
// window has not (ids grow with entry time, within the seconds an admission lasts), or past
// the last one read. Each call first records where the id sequence stands (session_clock),
// and a campaign's read stops below the next id of the earliest reading taken within its
// window: every session above it was drawn, so entered, after that reading, inside the
// window. A sweep so reads again at most the sessions drawn between the window's start and
// that reading (one sweep's worth), not every session still inside its window; and when it
// reads the whole range with none inside, the mark moves up to the bound. No
// index of sessions names outcome or released_at: a callback's update
// of its session and a release stay HOT (migration 0046). A campaign created after 0046
// starts at its own first session (SessionFloorSQL of its creation). A session is released
// only while it still has no outcome and is not released (a callback committing meanwhile
// wins).
//
// The read and the release are separate statements: the release names its sessions by id,
// planned for those ids, so that PostgreSQL keeps only the partitions that hold them and
// finds each in its partition's primary key. Released in the read's own statement, joined
// to its rows, the planner may hash them and scan every partition of sessions, a year of
// them, to find a few (docs/performance.md, "The sweeper's release on a year of sessions").
func (db *MaintenanceStore) ReleaseStaleSessions(ctx context.Context, limit int) (moved []int64, more bool, err error) {
	var ids, cids, marks []int64
	err = retry(ctx, func() error {
		moved, more = moved[:0], false
		ids, cids, marks = ids[:0], cids[:0], marks[:0]
		if _, err := db.Pool.Exec(ctx, tickClockSQL); err != nil {
			return err
		}
		rows, err := db.Pool.Query(ctx, staleSessionsSQL, limit)
		if err != nil {
			return err
		}
		var cid, mark int64
		var left bool
		var due []int64
		_, err = pgx.ForEachRow(rows, []any{&cid, &mark, &left, &due}, func() error {
			ids = append(ids, due...)
			cids, marks = append(cids, cid), append(marks, mark)
			more = more || left
			return nil
		})
		if err != nil || len(cids) == 0 {
			return err
		}
		slices.Sort(ids) // chunks that each fall in few partitions
		return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, releaseSettingsSQL); err != nil {
				return err
			}
			for chunk := range slices.Chunk(ids, releaseChunk) {
				rows, err := tx.Query(ctx, releaseSessionsSQL, chunk)
				if err != nil {
					return err
				}
				if moved, err = pgx.AppendRows(moved, rows, pgx.RowTo[int64]); err != nil {
					return err
				}
			}
			slices.Sort(moved)
			moved = slices.Compact(moved)
			_, err := tx.Exec(ctx, markSweptSQL, cids, marks)
			return err
		})
	})
	return moved, more, classify(err)
}

// tickClockSQL records where the sessions' id sequence stands (its next id) and forgets the
// readings older than a day: a callback window is at most 2 × 120 + 10 minutes.
const tickClockSQL = `WITH old AS (DELETE FROM session_clock WHERE at < now() - interval '1 day')
INSERT INTO session_clock (at, next_id)
SELECT now(), CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM sessions_id_seq
ON CONFLICT (at) DO NOTHING`

// staleSessionsSQL is ReleaseStaleSessions's read ($1 the sessions read per campaign at
// most): one row per campaign read, with where its mark moves, whether it has sessions past
// its window left to read, and the ids of its held sessions to release. A campaign's bound
// is the next id of the earliest clock reading within its window (there is always one, the
// call's own): every session at or above it was drawn after that reading, so its window has
// not passed. A session whose admission began before the reading and drew its id after it
// lies above the bound while its window may have passed: a later sweep releases it.
var staleSessionsSQL = `WITH c AS (
	SELECT c.id, c.length_of_interview AS loi, COALESCE(m.next_id, ` + SessionFloorSQL("c.created_at") + `) AS mark,
		(SELECT k.next_id FROM session_clock k WHERE k.at >= now() - make_interval(mins => 2 * c.length_of_interview + 10)
			ORDER BY k.at LIMIT 1) AS bound
	FROM campaigns c LEFT JOIN session_sweep_marks m ON m.campaign_id = c.id
	WHERE c.id IN (SELECT q.campaign_id FROM campaign_quotas q WHERE q.in_progress > 0)
), s AS (
	SELECT c.id AS cid, c.bound, x.id, x.held, x.due
	FROM c CROSS JOIN LATERAL (
		SELECT s.id, s.outcome IS NULL AND s.released_at IS NULL AS held,
			s.entered_at < now() - interval '10 minutes' AND s.entered_at < now() - make_interval(mins => 2 * c.loi + 10) AS due
		FROM sessions s WHERE s.campaign_id = c.id AND s.id >= c.mark AND s.id < c.bound AND NOT s.is_test
		ORDER BY s.id LIMIT $1) x
), w AS (
	SELECT s.*, min(s.id) FILTER (WHERE NOT s.due) OVER (PARTITION BY s.cid) AS young FROM s
)
SELECT cid, COALESCE(min(young), CASE WHEN count(*) < $1 THEN min(bound) ELSE max(id) + 1 END),
	min(young) IS NULL AND count(*) >= $1,
	COALESCE(array_agg(id) FILTER (WHERE held AND due AND (young IS NULL OR id < young)), '{}')
FROM w GROUP BY cid`

// releaseSettingsSQL plans each release for the ids it is given (a custom plan, whose
// partitions are pruned to those that hold them) and finds them by primary key.
const releaseSettingsSQL = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('enable_seqscan', 'off', true)`

// releaseChunk is how many sessions one release statement names at most: planning prunes
// the partitions by each id, about 2 µs apiece.
const releaseChunk = 10_000

// releaseSessionsSQL releases the sessions $1 that still have no outcome and are not
// released and takes them out of their quotas' in_progress; it returns the campaigns whose
// counts moved.
const releaseSessionsSQL = `WITH r AS (
	UPDATE sessions t SET released_at = now()
	WHERE t.id = ANY ($1::bigint[]) AND t.outcome IS NULL AND t.released_at IS NULL
	RETURNING t.campaign_id, t.quota_ids
), x AS (
	SELECT qid, count(*) AS n FROM r, unnest(r.quota_ids) AS qid GROUP BY qid
), q AS (
	UPDATE campaign_quotas cq SET in_progress = cq.in_progress - x.n FROM x WHERE cq.id = x.qid RETURNING 1
)
SELECT DISTINCT campaign_id FROM r`

// markSweptSQL moves the marks of campaigns $1 up to $2.
const markSweptSQL = `INSERT INTO session_sweep_marks AS m (campaign_id, next_id)
	SELECT * FROM unnest($1::bigint[], $2::bigint[])
	ON CONFLICT (campaign_id) DO UPDATE SET next_id = GREATEST(m.next_id, excluded.next_id)`

// BrokenLinkScope names the active campaigns PauseBrokenLinks looks at. Looking at every one
// costs a probe of its latest entries per campaign (1.6 s of PostgreSQL at 100,000
// campaigns). A campaign's link becomes broken only when an entry's window passes with no
// callback, which is when ReleaseStaleSessions releases it, so the sweeper looks at the
// campaigns whose entries it released, and at a rotating slice of all of them.
type BrokenLinkScope struct {
	All bool    // every active campaign
	IDs []int64 // else these campaigns,
	// and, when Slices > 0, those whose id % Slices is Slice.
	Slice, Slices int
}

// PauseBrokenLinks moves to 7 System Paused every active campaign of scope whose last n
// entries (since it last changed status) whose callback window (2 × LOI + 10 minutes) has
// passed got no callback, with no callback from any entry after them either. It returns the
// ids moved.
func (db *MaintenanceStore) PauseBrokenLinks(ctx context.Context, n int, scope BrokenLinkScope) ([]int64, error) {
	return db.moveCampaigns(ctx, StatusSystemPaused, ReasonNoCallbacks, `UPDATE campaigns c SET status = 7, status_changed_at = now(), updated_at = now()
		FROM (
			SELECT c2.id FROM campaigns c2
			CROSS JOIN LATERAL (
				SELECT count(*) AS n, min(x.entered_at) AS first FROM (
					SELECT s.entered_at FROM sessions s
					WHERE s.campaign_id = c2.id AND NOT s.is_test AND s.entered_at > c2.status_changed_at
					AND s.id >= `+SessionFloorSQL("c2.status_changed_at")+`
					AND s.entered_at < now() - make_interval(mins => 2 * c2.length_of_interview + 10)
					ORDER BY s.entered_at DESC LIMIT $1) x
			) w
			WHERE c2.status = 2 AND w.n >= $1
			AND ($2 OR c2.id = ANY($3) OR ($5::int > 0 AND c2.id % greatest($5::int, 1) = $4))
			AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.campaign_id = c2.id AND NOT s.is_test
				AND s.entered_at >= w.first AND s.outcome IS NOT NULL AND s.id >= `+SessionFloorSQL("w.first")+`)
		) broken
		WHERE c.id = broken.id AND c.status = 2
		RETURNING c.id, 2`, n, scope.All, scope.IDs, scope.Slice, scope.Slices)
}

// ClaimSweep claims the fleet's next sweep when the last one began at least after ago, and
// returns its number (counting from 1). ok is false when another process's sweep began more
// recently: the processes sharing the database sweep in turns, not each on its own period.
// The claim is one conditional upsert (a row deleted by hand is made again), so two
// processes never claim the same turn.
func (db *MaintenanceStore) ClaimSweep(ctx context.Context, after time.Duration) (turn int64, ok bool, err error) {
	err = db.Pool.QueryRow(ctx, `INSERT INTO sweeper_turns AS t (name, turn, at) VALUES ('sweep', 1, now())
		ON CONFLICT (name) DO UPDATE SET turn = t.turn + 1, at = now() WHERE t.at <= now() - $1::interval
		RETURNING t.turn`, after).Scan(&turn)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, classify(err)
	}
	return turn, true, nil
}
