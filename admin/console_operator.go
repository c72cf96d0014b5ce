package admin

import (
	"context"
	"fmt"
	"html/template"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/svgchart"
	"github.com/switchboard/switchboard/persistence"
)

// publisherList lists the supply partners (persistence AccountStore).
type publisherList interface {
	Publishers(ctx context.Context) ([]persistence.Publisher, error)
}

// marketStats is the exchange's traffic by day and by partner hour (persistence
// InsightStore).
type marketStats interface {
	MarketDays(ctx context.Context, from time.Time) ([]persistence.MarketDay, error)
	PublisherHourlyStats(ctx context.Context, pub int64, from, to time.Time) ([]persistence.PublisherHour, error)
}

// qualityBlocks is the quality blocks in force (persistence QualityStore).
type qualityBlocks interface {
	ActiveQualityBlocks(ctx context.Context, limit int) ([]persistence.QualityBlock, error)
	UnblockParticipant(ctx context.Context, publisherID int64, user, note string) ([]persistence.QualityBlock, error)
}

// processList is the serve processes' heartbeats (persistence MaintenanceStore).
type processList interface {
	ServeProcesses(ctx context.Context) ([]persistence.ServeProcess, time.Time, error)
}

// operatorPages are the console's operator view.
type operatorPages struct {
	*console
	publishers   publisherList
	market       marketStats
	quality      qualityBlocks
	heartbeats   processList
	postbacks    postbackQueue       // console_outbox.go
	engineStatus func() EngineStatus // nil: not shown
}

// EngineStatus is what the operator view shows of this process's engine: how long since its
// snapshot was last known equal to the database, and what it holds.
type EngineStatus struct {
	// ProcessID is this process's heartbeat id (persistence.ServeProcess), to mark its row
	// among every process's ("": none).
	ProcessID    string
	SnapshotAge  time.Duration
	Campaigns    int
	Participants int
}

// staleAfter is how old a serve process's last heartbeat (about every 10 s) may be before
// the operator view calls it stale: the process died without deleting its row, or cannot
// reach the database.
const staleAfter = time.Minute

// processRow is one serve process as the operator view lists it.
type processRow struct {
	persistence.ServeProcess
	This        bool   // the process serving the page
	Stale       bool   // no heartbeat for staleAfter
	SnapshotAge string // as of its last heartbeat; "not loaded" before its first load
	Seen        string // how long ago its last heartbeat was
}

// operatorWindow is how far back the operator view's totals reach.
const operatorWindow = 14 * 24 * time.Hour

// operatorPage is the operator view: the exchange's days, its partners, the postback
// backlog, the quality blocks in force and this process's engine.
type operatorPage struct {
	consoleBase
	Days      []persistence.MarketDay
	Market    template.HTML
	Partners  []partnerRow
	Outbox    outboxView // console_outbox.go
	Blocks    []persistence.QualityBlock
	Engine    EngineStatus
	HasEngine bool
	Processes []processRow
}

// partnerRow is one supply partner's traffic over the window.
type partnerRow struct {
	ID                           int64
	Name                         string
	Offers                       int64 // GET /campaigns answers served
	Entries, Completes, Rejected int64
	Terminations                 int64
	Conversion                   string // completes per entry
	OfferEntry                   string // entries per offer (entriesPerOffer)
}

// entriesPerOffer is the entries of hours (oldest first, from since on) per offer, or "–"
// while an hour's entries have no offers written for them: no offers at all, an hour whose
// offers each serve process has not written yet (about once a minute), or hours from before
// offers were counted. An entry's offer was served in its hour or the one before (an entry
// link lives 30 minutes, docs/rules.md), so an hour with entries needs offers written in one
// of the two; a ratio over the offers written so far would set entries against a part of
// their offers. The hour before since is not in hours: the first hour is taken as backed.
func entriesPerOffer(hours []persistence.PublisherHour, since time.Time) string {
	var entries, offers int64
	for i, h := range hours {
		entries += h.Entries
		offers += h.Offers
		backed := h.Offers > 0 || !h.Hour.After(since) ||
			(i > 0 && hours[i-1].Offers > 0 && hours[i-1].Hour.Equal(h.Hour.Add(-time.Hour)))
		if h.Entries > 0 && !backed {
			return "–"
		}
	}
	if offers == 0 {
		return "–"
	}
	return percent(float64(entries) / float64(offers))
}

func (a *operatorPages) registerOperator(mux *httpio.Mux) {
	p := ConsolePrefix + "/operator"
	op := func(h consoleHandler) fasthttp.RequestHandler { return a.page(true, p+"/sign-in", h) }
	mux.Handle("GET", p+"/sign-in", a.signInForm(true))
	mux.Handle("POST", p+"/sign-in", a.signIn(true))
	mux.Handle("GET", p, op(a.operatorHome))
	mux.Handle("GET", p+"/market.csv", op(a.marketCSV))
	mux.Handle("GET", p+"/partners.csv", op(a.partnersCSV))
	mux.Handle("POST", p+"/unblock", op(a.operatorUnblock))
}

func (a *operatorPages) partners(ctx *fasthttp.RequestCtx, since time.Time) ([]partnerRow, error) {
	pubs, err := a.publishers.Publishers(dbContext(ctx))
	if err != nil {
		return nil, err
	}
	out := make([]partnerRow, 0, len(pubs))
	for _, pub := range pubs {
		hours, err := a.market.PublisherHourlyStats(dbContext(ctx), pub.ID, since, time.Now().Add(time.Hour))
		if err != nil {
			return nil, err
		}
		r := partnerRow{ID: pub.ID, Name: pub.Name}
		for _, h := range hours {
			r.Offers += h.Offers
			r.Entries += h.Entries
			r.Completes += h.Completes
			r.Rejected += h.Rejected
			r.Terminations += h.Terminations
		}
		r.Conversion = percent(float64(r.Completes) / float64(max(r.Entries, 1)))
		r.OfferEntry = entriesPerOffer(hours, since)
		out = append(out, r)
	}
	return out, nil
}

func (a *operatorPages) operatorHome(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	since := time.Now().UTC().Add(-operatorWindow).Truncate(24 * time.Hour)
	days, err := a.market.MarketDays(dbContext(ctx), since)
	if err != nil {
		return err
	}
	partners, err := a.partners(ctx, since)
	if err != nil {
		return err
	}
	names := make(map[int64]string, len(partners))
	for _, p := range partners {
		names[p.ID] = p.Name
	}
	outbox, err := a.outbox(ctx, names)
	if err != nil {
		return err
	}
	blocks, err := a.quality.ActiveQualityBlocks(dbContext(ctx), 100)
	if err != nil {
		return err
	}
	p := &operatorPage{consoleBase: s.base("Operator"), Days: days, Partners: partners, Outbox: outbox, Blocks: blocks}
	if string(ctx.QueryArgs().Peek("done")) == "unblocked" {
		p.Notice = "Participant unblocked."
	}
	if a.engineStatus != nil {
		p.Engine, p.HasEngine = a.engineStatus(), true
	}
	if p.Processes, err = a.processes(ctx, p.Engine.ProcessID); err != nil {
		return err
	}
	p.Market = marketChart(days)
	a.render(ctx, fasthttp.StatusOK, "operator", p)
	return nil
}

// processes lists every serve process's heartbeat, this one (id self) marked.
func (a *operatorPages) processes(ctx *fasthttp.RequestCtx, self string) ([]processRow, error) {
	ps, now, err := a.heartbeats.ServeProcesses(dbContext(ctx))
	if err != nil {
		return nil, err
	}
	out := make([]processRow, len(ps))
	for i, p := range ps {
		seen := now.Sub(p.UpdatedAt)
		r := processRow{ServeProcess: p, This: self != "" && p.ID == self, Stale: seen > staleAfter,
			Seen: seen.Round(time.Second).String() + " ago", SnapshotAge: "not loaded"}
		if !p.SnapshotAt.IsZero() {
			r.SnapshotAge = p.UpdatedAt.Sub(p.SnapshotAt).Round(time.Millisecond).String()
		}
		out[i] = r
	}
	return out, nil
}

// marketSeries are the market chart's lines over every day from the first day in days to
// the last (a day missing from days has none of anything).
func marketSeries(days []persistence.MarketDay) []svgchart.Series {
	offers := svgchart.Series{Name: "offers", Color: offersColor}
	entries := svgchart.Series{Name: "entries", Color: entriesColor}
	completes := svgchart.Series{Name: "completes", Color: outcomeColor("complete")}
	for i, d := range days {
		if i > 0 {
			for gap := days[i-1].Day.AddDate(0, 0, 1); gap.Before(d.Day); gap = gap.AddDate(0, 0, 1) {
				x := svgchart.Day(gap)
				offers.Points = append(offers.Points, svgchart.Point{X: x})
				entries.Points = append(entries.Points, svgchart.Point{X: x})
				completes.Points = append(completes.Points, svgchart.Point{X: x})
			}
		}
		x := svgchart.Day(d.Day)
		offers.Points = append(offers.Points, svgchart.Point{X: x, Y: float64(d.Offers)})
		entries.Points = append(entries.Points, svgchart.Point{X: x, Y: float64(d.Entries)})
		completes.Points = append(completes.Points, svgchart.Point{X: x, Y: float64(d.Completes)})
	}
	return []svgchart.Series{offers, entries, completes}
}

func marketChart(days []persistence.MarketDay) template.HTML {
	desc := "No offers and no sessions in the last 14 days."
	if n := len(days); n > 0 {
		desc = fmt.Sprintf("%d days with offers or sessions from %s to %s; the table below and the CSV link give offers, entries, completes and revenue per day.",
			n, days[0].Day.Format(time.DateOnly), days[n-1].Day.Format(time.DateOnly))
	}
	// A logarithmic axis: offers outnumber entries, and entries completes, by one or two
	// orders of magnitude, and on a linear axis the two lower lines would lie flat at zero.
	// A day with none of a series leaves a gap in its line (the table has the zeros); a
	// day alone between gaps, or the only day, is a dot.
	//nolint:gosec // svgchart escapes every text it writes
	return template.HTML(svgchart.LineChart{Title: "Offers, entries and completes per day", Desc: desc, XLabel: "day (UTC)",
		YLabel: "count (log scale)", LogY: true, Dates: true, Series: marketSeries(days)}.Inline())
}

func (a *operatorPages) marketCSV(ctx *fasthttp.RequestCtx, _ *consoleSession) error {
	days, err := a.market.MarketDays(dbContext(ctx), time.Now().UTC().Add(-operatorWindow).Truncate(24*time.Hour))
	if err != nil {
		return err
	}
	// New columns come last: the columns before them keep their places for existing readers.
	// overages: late completes their quotas had no room for (docs/rules.md §5), paid to
	// partners (overage_payout_usd) and charged to no buyer.
	rows := [][]string{{"day", "entries", "completes", "revenue_usd", "partner_payout_usd", "offers", "overages", "overage_payout_usd"}}
	for _, d := range days {
		rows = append(rows, []string{d.Day.Format("2006-01-02"), strconv.FormatInt(d.Entries, 10), strconv.FormatInt(d.Completes, 10),
			d.Revenue.String(), d.PayoutUSD, strconv.FormatInt(d.Offers, 10), strconv.FormatInt(d.Overages, 10), d.OveragePayoutUSD})
	}
	writeCSV(ctx, "market.csv", rows)
	return nil
}

func (a *operatorPages) partnersCSV(ctx *fasthttp.RequestCtx, _ *consoleSession) error {
	partners, err := a.partners(ctx, time.Now().UTC().Add(-operatorWindow).Truncate(24*time.Hour))
	if err != nil {
		return err
	}
	// The offer columns come last: the columns before them keep their places for existing readers.
	rows := [][]string{{"publisher_id", "name", "entries", "completes", "terminations", "rejected", "conversion", "offers", "entries_per_offer"}}
	for _, p := range partners {
		rows = append(rows, []string{strconv.FormatInt(p.ID, 10), p.Name, strconv.FormatInt(p.Entries, 10),
			strconv.FormatInt(p.Completes, 10), strconv.FormatInt(p.Terminations, 10), strconv.FormatInt(p.Rejected, 10), p.Conversion,
			strconv.FormatInt(p.Offers, 10), p.OfferEntry})
	}
	writeCSV(ctx, "partners.csv", rows)
	return nil
}

// operatorUnblock lifts a participant's quality block, as `switchboard quality unblock` does.
func (a *operatorPages) operatorUnblock(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	pub, err := strconv.ParseInt(string(ctx.PostArgs().Peek("publisher_id")), 10, 64)
	user := string(ctx.PostArgs().Peek("user"))
	if err != nil || pub < 1 || user == "" {
		return fault.Invalid("user", "publisher_id and user are required")
	}
	if _, err := a.quality.UnblockParticipant(dbContext(ctx), pub, user, "console: "+s.Operator.Name); err != nil {
		return err
	}
	a.seeOther(ctx, ConsolePrefix+"/operator?done=unblocked")
	return nil
}
