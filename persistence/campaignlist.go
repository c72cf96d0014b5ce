package persistence

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/switchboard/switchboard/internal/fault"
)

// The console's campaign list: one buyer's campaigns searched, filtered, sorted and paged
// by the database, each with its dates, fill, completes and spend. It stays one page's
// worth of work at any number of campaigns when sorted by a campaign column (the page is
// cut before its figures are read); sorted by a figure, that figure is summed for every
// matching campaign first (TestCampaignListAt10k measures both at 10,000 campaigns).

// Columns the campaign list sorts by (CampaignListQuery.Sort).
const (
	CampaignSortID        = "id"
	CampaignSortName      = "name"
	CampaignSortStatus    = "status"
	CampaignSortCountry   = "country"
	CampaignSortCPI       = "cpi"
	CampaignSortCreated   = "created"
	CampaignSortStart     = "start"
	CampaignSortEnd       = "end"
	CampaignSortFill      = "fill"
	CampaignSortCompletes = "completes"
	CampaignSortSpend     = "spend"
)

// campaignSorts maps each sort to its SQL expression over the list's rows. A figure's sort
// has key, the figure over the matching campaigns f joined with the figure's sums (join),
// which are read for every matching campaign before the page is cut; the other figures are
// read for the page's rows only. Only the matching campaigns' ids (and CPIs, for spend) go
// through a figure's sort: the campaign columns are read for the page's rows.
var campaignSorts = map[string]struct{ expr, key, join string }{
	CampaignSortID:      {expr: "id"},
	CampaignSortName:    {expr: "lower(name)"},
	CampaignSortStatus:  {expr: "status"},
	CampaignSortCountry: {expr: "abbr"},
	CampaignSortCPI:     {expr: "cpi_cents"},
	CampaignSortCreated: {expr: "created_at"},
	CampaignSortStart:   {expr: "start_at"},
	CampaignSortEnd:     {expr: "end_at"},
	CampaignSortFill: {expr: "CASE WHEN target = 0 THEN 0 ELSE (target - remaining)::float8 / target END",
		key:  "CASE WHEN COALESCE(kq.t, 0) = 0 THEN 0 ELSE (kq.t - kq.r)::float8 / kq.t END",
		join: sumQuotas},
	CampaignSortCompletes: {expr: "completes", key: "COALESCE(kd.n, 0)", join: sumCompletes},
	// Spend sums the ledger, and completes only of the campaigns without ledger events (most
	// of them have no complete either: a probe of the index finds nothing).
	CampaignSortSpend: {expr: "spend", key: `COALESCE(kl.s, f.cpi_cents::bigint * 100 *
			(SELECT COALESCE(sum(d.completes), 0) FROM campaign_daily_counts d WHERE d.campaign_id = f.id))`,
		join: sumCharges},
}

// The sums of the matching campaigns f that a figure's sort reads: their quotas' targets
// (t) and remaining (r), completes (n) and ledger charges (s).
const (
	sumQuotas = ` LEFT JOIN (SELECT q.campaign_id,
			sum(q.num_respondents) FILTER (WHERE NOT q.is_global) AS t,
			sum(GREATEST(0, q.num_respondents - q.completes)) FILTER (WHERE NOT q.is_global) AS r
		FROM f JOIN campaign_quotas q ON q.campaign_id = f.id GROUP BY 1) kq ON kq.campaign_id = f.id`
	sumCompletes = ` LEFT JOIN (SELECT d.campaign_id, sum(d.completes)::bigint AS n
		FROM f JOIN campaign_daily_counts d ON d.campaign_id = f.id GROUP BY 1) kd ON kd.campaign_id = f.id`
	sumCharges = ` LEFT JOIN (SELECT l.campaign_id, sum(l.charge_usd)::bigint AS s
		FROM ledger_events l WHERE l.buyer_id = $1 GROUP BY 1) kl ON kl.campaign_id = f.id`
)

// CampaignSorts lists the columns the campaign list sorts by.
func CampaignSorts() []string {
	return []string{CampaignSortID, CampaignSortName, CampaignSortStatus, CampaignSortCountry, CampaignSortCPI,
		CampaignSortCreated, CampaignSortStart, CampaignSortEnd, CampaignSortFill, CampaignSortCompletes, CampaignSortSpend}
}

// MaxCampaignListPage bounds CampaignListQuery.PerPage.
const MaxCampaignListPage = 200

// CampaignListQuery selects and orders a page of the campaign list. Every filter is
// optional (zero: not applied); the caller has validated each value.
type CampaignListQuery struct {
	// Search keeps the campaigns whose name contains it (case-insensitive), or whose id it is.
	Search string
	// Statuses keeps the campaigns in one of these statuses.
	Statuses []int
	// CountryLanguageID keeps the campaigns of this country language.
	CountryLanguageID int
	// CreatedFrom and CreatedBefore keep the campaigns created at or after CreatedFrom and
	// before CreatedBefore.
	CreatedFrom, CreatedBefore time.Time
	// Sort is one of CampaignSorts (default id); Desc reverses it. Ties go by id, the same
	// way; a campaign without the date sorted by comes last either way.
	Sort string
	Desc bool
	// Page (from 1) of PerPage rows; PerPage 0 is every row (the CSV export).
	Page, PerPage int
}

// CampaignListRow is one campaign of the list.
type CampaignListRow struct {
	ID                int64
	Name              string
	Status            int
	CountryLanguageID int
	CountryLanguage   string // its abbreviation ("ENG-US")
	CPI               Cents
	CreatedAt         time.Time
	// Start is when the campaign last went into field (active campaigns only: the engine
	// paces from it); End is when it was completed (complete, archived and reconciled
	// campaigns) or, for an active one, Start + days in field (EndPlanned).
	Start, End *time.Time
	EndPlanned bool
	// Target is what its non-global quotas ask for, Filled how much of it is done (each
	// quota counting up to its target).
	Target, Filled int64
	// Completes is its accepted completes (campaign_daily_counts: overages, rejected and
	// test sessions aside).
	Completes int64
	// Spend is what the buyer is charged: the sum of its ledger events' charges when it has
	// any (SpendFromLedger), else cpi × completes; ten-thousandths of a USD, as the ledger.
	Spend           int64
	SpendFromLedger bool
}

// campaignListFilter is the WHERE of the campaign list over campaigns c, and its arguments
// ($1 the buyer).
func campaignListFilter(buyerID int64, q CampaignListQuery) (string, []any) {
	var b strings.Builder
	args := []any{buyerID}
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	b.WriteString("c.buyer_id = $1")
	if q.Search != "" {
		pattern := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(q.Search) + "%"
		b.WriteString(" AND (c.name ILIKE " + arg(pattern) + ` ESCAPE '\'`)
		if id, err := strconv.ParseInt(strings.TrimPrefix(q.Search, "#"), 10, 64); err == nil {
			b.WriteString(" OR c.id = " + arg(id))
		}
		b.WriteString(")")
	}
	if len(q.Statuses) > 0 {
		b.WriteString(" AND c.status = ANY(" + arg(q.Statuses) + "::int[])")
	}
	if q.CountryLanguageID != 0 {
		b.WriteString(" AND c.country_language_id = " + arg(q.CountryLanguageID))
	}
	if !q.CreatedFrom.IsZero() {
		b.WriteString(" AND c.created_at >= " + arg(q.CreatedFrom))
	}
	if !q.CreatedBefore.IsZero() {
		b.WriteString(" AND c.created_at < " + arg(q.CreatedBefore))
	}
	return b.String(), args
}

// campaignListColumns are a list row's campaign columns (f) over campaigns c and
// country_languages cl.
const campaignListColumns = `c.id, c.name, c.status::int AS status, c.country_language_id, cl.abbr, c.cpi_cents, c.created_at,
	CASE WHEN c.status = 2 THEN c.status_changed_at END AS start_at,
	CASE WHEN c.status IN (3, 4, 6) THEN c.completed_at
		WHEN c.status = 2 THEN c.status_changed_at + make_interval(days => CASE WHEN c.days_in_field > 0 THEN c.days_in_field ELSE 5 END)
	END AS end_at`

// campaignListFigures are a list row's figures, read per campaign of p.
const campaignListFigures = `SELECT p.*, fq.target, fq.remaining, fd.completes,
		COALESCE(fl.charge, p.cpi_cents::bigint * 100 * fd.completes) AS spend, fl.charge IS NOT NULL AS from_ledger
	FROM p
	CROSS JOIN LATERAL (SELECT COALESCE(sum(q.num_respondents) FILTER (WHERE NOT q.is_global), 0)::bigint AS target,
		COALESCE(sum(GREATEST(0, q.num_respondents - q.completes)) FILTER (WHERE NOT q.is_global), 0)::bigint AS remaining
		FROM campaign_quotas q WHERE q.campaign_id = p.id) fq
	CROSS JOIN LATERAL (SELECT COALESCE(sum(d.completes), 0)::bigint AS completes
		FROM campaign_daily_counts d WHERE d.campaign_id = p.id) fd
	CROSS JOIN LATERAL (SELECT sum(l.charge_usd)::bigint AS charge FROM ledger_events l WHERE l.buyer_id = $1 AND l.campaign_id = p.id) fl`

// campaignListSQL is the query of a page of the campaign list of the campaigns matching
// where (campaignListFilter), its rows in the order of q.
func campaignListSQL(where string, q CampaignListQuery) string {
	sort, ok := campaignSorts[q.Sort]
	if !ok {
		sort = campaignSorts[CampaignSortID]
	}
	dir := " ASC"
	if q.Desc {
		dir = " DESC"
	}
	order := " ORDER BY " + sort.expr + dir + " NULLS LAST, id" + dir
	limit := ""
	if q.PerPage > 0 {
		limit = " LIMIT " + strconv.Itoa(q.PerPage) + " OFFSET " + strconv.FormatInt(int64(max(q.Page, 1)-1)*int64(q.PerPage), 10)
	}
	from := ` FROM campaigns c JOIN country_languages cl ON cl.id = c.country_language_id WHERE `
	sql := `WITH f AS (SELECT ` + campaignListColumns + from + where + `), p AS (SELECT * FROM f` + order + limit + `)`
	if sort.key != "" {
		// A figure's sort orders the matching campaigns' ids and CPIs alone (f) by the figure
		// and cuts the page (k) before reading the page's campaign columns (p).
		sql = `WITH f AS (SELECT c.id, c.cpi_cents FROM campaigns c WHERE ` + where + `),
			k AS (SELECT f.id FROM f` + sort.join + ` ORDER BY ` + sort.key + dir + `, f.id` + dir + limit + `),
			p AS (SELECT ` + campaignListColumns + from + `c.buyer_id = $1 AND c.id IN (SELECT id FROM k))`
	}
	sql += ` SELECT * FROM (` + campaignListFigures + `) r` + order
	return sql
}

// CampaignList reads a page of the buyer's campaigns (q) and how many match in all, in one
// read-only snapshot. Past the last page is an empty page.
func (db *CampaignStore) CampaignList(ctx context.Context, buyerID int64, q CampaignListQuery) ([]CampaignListRow, int64, error) {
	where, args := campaignListFilter(buyerID, q)
	sql := campaignListSQL(where, q)
	var out []CampaignListRow
	var total int64
	err := pgx.BeginTxFunc(ctx, db.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM campaigns c WHERE `+where, args...).Scan(&total); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r CampaignListRow
			var cpi, remaining int64
			if err := rows.Scan(&r.ID, &r.Name, &r.Status, &r.CountryLanguageID, &r.CountryLanguage, &cpi, &r.CreatedAt,
				&r.Start, &r.End, &r.Target, &remaining, &r.Completes, &r.Spend, &r.SpendFromLedger); err != nil {
				return err
			}
			r.CPI, r.Filled = Cents(cpi), r.Target-remaining
			r.EndPlanned = r.Status == StatusActive && r.End != nil
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, classify(err)
	}
	return out, total, nil
}

// CampaignDates are a campaign's dates as the list shows them (CampaignListRow).
type CampaignDates struct {
	CreatedAt  time.Time
	Start, End *time.Time
	EndPlanned bool
}

// CampaignDates reads the dates of one of the buyer's campaigns.
func (db *CampaignStore) CampaignDates(ctx context.Context, buyerID, id int64) (CampaignDates, error) {
	var d CampaignDates
	var status int
	err := db.Pool.QueryRow(ctx, `SELECT status, created_at, start_at, end_at FROM (SELECT `+campaignListColumns+`
		FROM campaigns c JOIN country_languages cl ON cl.id = c.country_language_id WHERE c.id = $1 AND c.buyer_id = $2) f`,
		id, buyerID).Scan(&status, &d.CreatedAt, &d.Start, &d.End)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, fault.NotFound("campaign not found")
	}
	d.EndPlanned = status == StatusActive && d.End != nil
	return d, classify(err)
}
