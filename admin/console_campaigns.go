package admin

import (
	"context"
	"encoding/csv"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/svgchart"
	"github.com/switchboard/switchboard/persistence"
)

// campaignActivity is what a campaign's page shows of its sessions (persistence
// InsightStore).
type campaignActivity interface {
	CampaignStart(ctx context.Context, campaignID int64) (time.Time, error)
	CampaignDailyCompletes(ctx context.Context, campaignID int64) ([]persistence.DayCount, error)
	CampaignOutcomes(ctx context.Context, campaignID int64) ([]persistence.OutcomeCount, error)
}

// campaignPages are the console's campaign list and campaign page, whose actions go
// through the buyer interface's campaigns and quotas.
type campaignPages struct {
	*console
	store     campaignStore
	catalog   questionCatalog
	activity  campaignActivity
	suppliers supplierList
	env       string
	campaigns *campaignAPI
	quotas    *quotaAPI
}

// fill is what a campaign's quotas ask for (their targets, global quotas aside) and how much
// of it is done: the list read's total_remaining taken from the target.
func fill(c persistence.Campaign, quotas []persistence.Quota) (target, filled int64) {
	for _, q := range quotas {
		if !q.IsGlobal {
			target += int64(q.NumRespondents)
		}
	}
	return target, target - c.TotalRemaining
}

// quotaRow is one quota of the campaign page with its fill and its conditions in words.
type quotaRow struct {
	persistence.Quota
	Label      string
	Conditions []condition
}

// campaignPage is one campaign: quotas' fill, completes per day against even pacing, its
// statistics, its drop-off and the actions.
type campaignPage struct {
	consoleBase
	C              persistence.CampaignDetail
	Target, Filled int64
	Quotas         []quotaRow
	Pacing         template.HTML // inline SVG
	DropOff        template.HTML // inline SVG
	Outcomes       []persistence.OutcomeCount
	Days           []pacingDay
	CanPause       bool
	CanActivate    bool
	CanComplete    bool
	Dates          persistence.CampaignDates
	Country        string
	Screeners      []condition
	Excluded       []excludedSupplier
}

// pacingDay is one day of field: completes that day, cumulative, and the even-pacing target.
type pacingDay struct {
	Day        time.Time // UTC midnight
	Completes  int64
	Cumulative int64
	Even       int64
	Ahead      bool // the day has not begun: it has no completes to show yet
}

// campaignOf is the campaign of the path's id, if it is the session's buyer's.
func campaignOf(ctx *fasthttp.RequestCtx, store campaignStore, s *consoleSession) (persistence.CampaignDetail, error) {
	id, err := pathID(ctx, "id")
	if err != nil {
		return persistence.CampaignDetail{}, err
	}
	return store.Campaign(dbContext(ctx), s.Buyer.ID, id)
}

// pacing lays out the campaign's completes per day (pacingDays).
func (a *campaignPages) pacing(ctx *fasthttp.RequestCtx, c persistence.CampaignDetail, target int64) ([]pacingDay, error) {
	start, err := a.activity.CampaignStart(dbContext(ctx), c.ID)
	if err != nil {
		return nil, err
	}
	daily, err := a.activity.CampaignDailyCompletes(dbContext(ctx), c.ID)
	if err != nil {
		return nil, err
	}
	return pacingDays(start, c.DaysInField, target, daily, time.Now()), nil
}

// pacingDays lays out completes per UTC day from start to the last day in field (or today,
// or the last day with completes, when later; a year at most), with the even-pacing line:
// target × days elapsed / days in field. The days after now's are Ahead.
func pacingDays(start time.Time, daysInField int, target int64, daily []persistence.DayCount, now time.Time) []pacingDay {
	first := start.UTC().Truncate(24 * time.Hour)
	days := max(daysInField, 1)
	today := int(now.UTC().Sub(first) / (24 * time.Hour))
	days = max(days, today+1)
	if n := len(daily); n > 0 {
		if last := int(daily[n-1].Day.Sub(first)/(24*time.Hour)) + 1; last > days {
			days = last
		}
	}
	days = min(days, 366)
	out := make([]pacingDay, days)
	for i := range out {
		out[i].Day = first.AddDate(0, 0, i)
		out[i].Even = int64(math.Round(float64(target) * float64(min(i+1, daysInField)) / float64(max(daysInField, 1))))
		out[i].Ahead = i > today
	}
	for _, d := range daily {
		if i := int(d.Day.Sub(first) / (24 * time.Hour)); i >= 0 && i < days {
			out[i].Completes += d.Count
		}
	}
	var sum int64
	for i := range out {
		sum += out[i].Completes
		out[i].Cumulative = sum
	}
	return out
}

func (a *campaignPages) consoleCampaign(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	c, err := campaignOf(ctx, a.store, s)
	if err != nil {
		return err
	}
	target, filled := fill(c.Campaign, c.CampaignQuotas)
	days, err := a.pacing(ctx, c, target)
	if err != nil {
		return err
	}
	outcomes, err := a.activity.CampaignOutcomes(dbContext(ctx), c.ID)
	if err != nil {
		return err
	}
	p := &campaignPage{consoleBase: s.base(c.Name), C: c, Target: target, Filled: filled, Days: days, Outcomes: outcomes,
		CanPause:    c.Status == persistence.StatusActive,
		CanActivate: c.Status == persistence.StatusPaused || c.Status == persistence.StatusSystemPaused,
		CanComplete: c.Status == persistence.StatusActive || c.Status == persistence.StatusPaused}
	p.Notice = noticeOf(ctx)
	if err := a.campaignTargeting(ctx, s, p); err != nil {
		return err
	}
	p.Pacing = pacingChart(days)
	p.DropOff = dropOffChart(outcomes)
	a.render(ctx, fasthttp.StatusOK, "campaign", p)
	return nil
}

// campaignTargeting fills the campaign page's dates, country, quotas with their conditions
// in words, screeners and excluded suppliers.
func (a *campaignPages) campaignTargeting(ctx *fasthttp.RequestCtx, s *consoleSession, p *campaignPage) error {
	dbc, c := dbContext(ctx), p.C
	var err error
	if p.Dates, err = a.store.CampaignDates(dbc, s.Buyer.ID, c.ID); err != nil {
		return err
	}
	countries, err := a.catalog.CountryLanguages(dbc)
	if err != nil {
		return err
	}
	p.Country = strconv.Itoa(c.CountryLanguageID)
	if i := slices.IndexFunc(countries, func(cl persistence.CountryLanguage) bool { return cl.ID == c.CountryLanguageID }); i >= 0 {
		p.Country = countries[i].Abbr
	}
	texts, err := a.catalog.QuestionTexts(dbc, s.Buyer.ID, c.CountryLanguageID, targetingQuestions(c))
	if err != nil {
		return err
	}
	for i, q := range c.CampaignQuotas {
		label := fmt.Sprintf("Quota %d", i+1)
		if q.Name != nil && *q.Name != "" {
			label = *q.Name
		}
		p.Quotas = append(p.Quotas, quotaRow{Quota: q, Label: label, Conditions: quotaConditions(q, texts)})
	}
	for _, cq := range c.CustomCampaignQualifications {
		t, ok := texts[cq.QuestionID]
		p.Screeners = append(p.Screeners, conditionWords(cq.QuestionID, cq.PreCodes, nil, t, ok))
	}
	if len(c.ExcludedSupplierIDs) > 0 {
		all, err := a.suppliers.Suppliers(dbc, a.env)
		if err != nil {
			return err
		}
		p.Excluded = excludedSuppliers(c.ExcludedSupplierIDs, all)
	}
	return nil
}

// pacingSeries are the pacing chart's lines: cumulative completes over the days that have
// begun (a day ahead has no completes yet, not zero), and the even-pacing line over the whole
// field.
func pacingSeries(days []pacingDay) (got, even svgchart.Series) {
	got = svgchart.Series{Name: "completes", Color: outcomeColor("complete")}
	even = svgchart.Series{Name: "even pacing", Dashed: true, Color: evenPacingColor}
	for _, d := range days {
		x := svgchart.Day(d.Day)
		if !d.Ahead {
			got.Points = append(got.Points, svgchart.Point{X: x, Y: float64(d.Cumulative)})
		}
		even.Points = append(even.Points, svgchart.Point{X: x, Y: float64(d.Even)})
	}
	return got, even
}

func pacingChart(days []pacingDay) template.HTML {
	got, even := pacingSeries(days)
	desc := "No day in field yet."
	if n := len(days); n > 0 {
		now := days[0]
		for _, d := range days {
			if !d.Ahead {
				now = d
			}
		}
		desc = fmt.Sprintf("Over %d days from %s: %d completes by %s, against %d by even pacing then and %d by %s. The table below and the CSV link give every day.",
			n, days[0].Day.Format(time.DateOnly), now.Cumulative, now.Day.Format(time.DateOnly), now.Even, days[n-1].Even,
			days[n-1].Day.Format(time.DateOnly))
	}
	//nolint:gosec // svgchart escapes every text it writes
	return template.HTML(svgchart.LineChart{Title: "Completes per day against even pacing", Desc: desc,
		XLabel: "day (UTC)", YLabel: "completes (cumulative)", Dates: true, Series: []svgchart.Series{got, even}}.Inline())
}

func dropOffChart(outcomes []persistence.OutcomeCount) template.HTML {
	var bars []svgchart.Bar
	desc := "No entries yet."
	var total int64
	for _, o := range outcomes {
		total += o.Count
	}
	for _, o := range outcomes {
		bars = append(bars, svgchart.Bar{Label: outcomeLabel(o.Outcome), Value: float64(o.Count),
			Note: percent(float64(o.Count) / float64(max(total, 1))), Color: outcomeColor(o.Outcome)})
	}
	if total > 0 {
		desc = fmt.Sprintf("%d entries by how they ended; the table below and the CSV link give the numbers.", total)
	}
	//nolint:gosec // svgchart escapes every text it writes
	return template.HTML(svgchart.BarChart{Title: "Entries by outcome", Unit: "entries", Desc: desc, Bars: bars}.Inline())
}

// Chart colours. Each outcome has one colour on every chart of the console, whatever its
// rank or place (outcomeColor); the other lines take colours no outcome has. Each stands out
// from the white background by at least 3:1 (WCAG's contrast for graphics).
const (
	offersColor     = "#0b4fb3" // blue, the console's links and buttons
	entriesColor    = "#00838f" // teal
	evenPacingColor = "#4a4a4a" // dark grey, dashed: a reference, not a count
	otherColor      = "#37474f" // slate: an outcome without its own colour
)

var outcomeColors = map[string]string{
	"complete":     "#2e7d32", // green
	"rejected":     "#b3261e", // red
	"over_quota":   "#b35900", // orange
	"quality_term": "#6a1b9a", // purple
	"disqualified": "#795548", // brown
	"in_progress":  "#757575", // grey
}

// outcomeColor is outcome o's colour on every chart (persistence.OutcomeCount's outcomes).
func outcomeColor(o string) string {
	if c, ok := outcomeColors[o]; ok {
		return c
	}
	return otherColor
}

// outcomeLabel names an outcome for people.
func outcomeLabel(o string) string {
	switch o {
	case "complete":
		return "complete"
	case "rejected":
		return "complete, rejected"
	case "over_quota":
		return "over quota"
	case "quality_term":
		return "quality termination"
	case "disqualified":
		return "screened out"
	case "in_progress":
		return "no outcome yet"
	}
	return o
}

// percent formats a fraction as a percentage with one decimal.
func percent(f float64) string { return strconv.FormatFloat(f*100, 'f', 1, 64) + "%" }

// statusLabel names a campaign status for people.
func statusLabel(s int) string {
	switch s {
	case persistence.StatusActive:
		return "active"
	case persistence.StatusComplete:
		return "complete"
	case persistence.StatusArchived:
		return "archived"
	case persistence.StatusPaused:
		return "paused"
	case persistence.StatusReconciled:
		return "reconciled"
	case persistence.StatusSystemPaused:
		return "paused by the system"
	}
	return strconv.Itoa(s)
}

// writeCSV answers rows as a CSV download named name.
func writeCSV(ctx *fasthttp.RequestCtx, name string, rows [][]string) {
	ctx.Response.Header.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	ctx.SetContentType("text/csv; charset=utf-8")
	for _, row := range rows {
		for i := range row {
			row[i] = persistence.SpreadsheetText(row[i])
		}
	}
	w := csv.NewWriter(ctx)
	_ = w.WriteAll(rows) // a write to the response buffer does not fail
}

func (a *campaignPages) consoleCompletesCSV(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	c, err := campaignOf(ctx, a.store, s)
	if err != nil {
		return err
	}
	target, _ := fill(c.Campaign, c.CampaignQuotas)
	days, err := a.pacing(ctx, c, target)
	if err != nil {
		return err
	}
	rows := [][]string{{"day", "completes", "cumulative_completes", "even_pacing_target"}}
	for _, d := range days {
		rows = append(rows, []string{d.Day.Format(time.DateOnly), strconv.FormatInt(d.Completes, 10), strconv.FormatInt(d.Cumulative, 10),
			strconv.FormatInt(d.Even, 10)})
	}
	writeCSV(ctx, fmt.Sprintf("campaign-%d-completes.csv", c.ID), rows)
	return nil
}

func (a *campaignPages) consoleOutcomesCSV(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	c, err := campaignOf(ctx, a.store, s)
	if err != nil {
		return err
	}
	outcomes, err := a.activity.CampaignOutcomes(dbContext(ctx), c.ID)
	if err != nil {
		return err
	}
	rows := [][]string{{"outcome", "entries"}}
	for _, o := range outcomes {
		rows = append(rows, []string{o.Outcome, strconv.FormatInt(o.Count, 10)})
	}
	writeCSV(ctx, fmt.Sprintf("campaign-%d-outcomes.csv", c.ID), rows)
	return nil
}

// notices are the confirmations a redirect after an action may name (?done=...).
var notices = map[string]string{
	"paused": "Campaign paused.", "activated": "Campaign activated.", "completed": "Campaign completed.",
	"quota": "Quota target changed.",
}

func noticeOf(ctx *fasthttp.RequestCtx) string { return notices[string(ctx.QueryArgs().Peek("done"))] }

// consoleStatus pauses, activates or completes a campaign through PUT /campaigns/{id}'s own
// validation and store.
func (a *campaignPages) consoleStatus(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	id, err := pathID(ctx, "id")
	if err != nil {
		return err
	}
	var status int
	var done string
	switch string(ctx.PostArgs().Peek("status")) {
	case "pause":
		status, done = persistence.StatusPaused, "paused"
	case "activate":
		status, done = persistence.StatusActive, "activated"
	case "complete":
		status, done = persistence.StatusComplete, "completed"
	default:
		return fault.Invalid("status", "must be pause, activate or complete")
	}
	if _, err := a.campaigns.changeCampaign(dbContext(ctx), s.Buyer, id, fmt.Appendf(nil, `{"status":%d}`, status)); err != nil {
		return err
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d?done=%s", ConsolePrefix, id, done))
	return nil
}

// consoleQuota changes a quota's target through PUT .../campaign_quotas/{quota_id}'s own
// validation and store.
func (a *campaignPages) consoleQuota(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	cid, qid, err := quotaPath(ctx)
	if err != nil {
		return err
	}
	n, perr := strconv.ParseInt(string(ctx.PostArgs().Peek("num_respondents")), 10, 32)
	if perr != nil {
		return fault.Invalid("num_respondents", "must be a whole number")
	}
	if _, err := a.quotas.changeQuota(dbContext(ctx), s.Buyer, cid, qid, fmt.Appendf(nil, `{"num_respondents":%d}`, n)); err != nil {
		return err
	}
	a.seeOther(ctx, fmt.Sprintf("%s/campaigns/%d?done=quota", ConsolePrefix, cid))
	return nil
}
