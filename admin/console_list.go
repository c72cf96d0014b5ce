package admin

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// The console's campaign list is a GET form: search, filters, sort and page are query
// parameters, so every view of the list is a link to bookmark, and needs no script. The same
// parameters give the CSV export of the whole filtered list (campaigns.csv).

// Query parameters of the campaign list.
const (
	listSearch         = "q"
	listStatus         = "status"
	listCountry        = "country_language_id"
	listCreatedFrom    = "created_from"
	listCreatedTo      = "created_to"
	listSort           = "sort"
	listDir            = "dir"
	listPage           = "page"
	listPerPage        = "per_page"
	maxListSearch      = 255
	defaultListPerPage = 50
)

// listPerPages are the page sizes the list offers.
var listPerPages = []int{25, 50, 100, persistence.MaxCampaignListPage}

// listStatuses are the statuses the list filters by, in the order shown.
var listStatuses = []int{persistence.StatusActive, persistence.StatusPaused, persistence.StatusSystemPaused,
	persistence.StatusComplete, persistence.StatusReconciled, persistence.StatusArchived}

// campaignListParams is the list's query as given (for the form and the links) and as read.
type campaignListParams struct {
	Search, CreatedFrom, CreatedTo string
	Statuses                       []int
	Country                        int
	Sort                           string
	Desc                           bool
	Page, PerPage                  int
}

// readListParams reads the campaign list's query parameters; every bad one is a field error
// naming it (the list is then not read). countries are the known country languages.
func readListParams(args *fasthttp.Args, countries []persistence.CountryLanguage) (campaignListParams, persistence.CampaignListQuery, []pagekit.FieldError) {
	p := campaignListParams{Sort: persistence.CampaignSortID, Page: 1, PerPage: defaultListPerPage}
	var errs []pagekit.FieldError
	bad := func(field, msg string) { errs = append(errs, pagekit.FieldError{Field: field, Message: msg}) }
	p.readFilters(args, countries, bad)
	from, to := p.readCreated(args, bad)
	p.readOrder(args, bad)
	p.readPaging(args, bad)
	q := persistence.CampaignListQuery{Search: p.Search, Statuses: p.Statuses, CountryLanguageID: p.Country,
		CreatedFrom: from, Sort: p.Sort, Desc: p.Desc, Page: p.Page, PerPage: p.PerPage}
	if !to.IsZero() {
		q.CreatedBefore = to.AddDate(0, 0, 1)
	}
	return p, q, errs
}

// readFilters reads the search, statuses and country language of the list.
func (p *campaignListParams) readFilters(args *fasthttp.Args, countries []persistence.CountryLanguage, bad func(field, msg string)) {
	p.Search = strings.TrimSpace(string(args.Peek(listSearch)))
	switch {
	case !httpio.ValidText(p.Search):
		bad(listSearch, "Search "+httpio.TextRule+".")
		p.Search = strings.ToValidUTF8(strings.ReplaceAll(p.Search, "\x00", ""), "")
	case utf8.RuneCountInString(p.Search) > maxListSearch:
		bad(listSearch, "Search must be at most 255 characters.")
	}
	for _, v := range args.PeekMulti(listStatus) {
		n, err := strconv.Atoi(string(v))
		if err != nil || !slices.Contains(listStatuses, n) {
			bad(listStatus, "Status must be one of the statuses listed.")
			break
		}
		if !slices.Contains(p.Statuses, n) {
			p.Statuses = append(p.Statuses, n)
		}
	}
	if v := string(args.Peek(listCountry)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || !slices.ContainsFunc(countries, func(c persistence.CountryLanguage) bool { return c.ID == n }) {
			bad(listCountry, "Country and language must be one of those listed.")
		} else {
			p.Country = n
		}
	}
}

// readCreated reads the creation dates the list is bounded by (zero: unbounded).
func (p *campaignListParams) readCreated(args *fasthttp.Args, bad func(field, msg string)) (from, to time.Time) {
	day := func(field, name string) (time.Time, string) {
		v := strings.TrimSpace(string(args.Peek(field)))
		if v == "" {
			return time.Time{}, ""
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil || t.Year() < 2000 || t.Year() > 9999 {
			bad(field, name+" must be a date, YYYY-MM-DD.")
			return time.Time{}, v
		}
		return t, v
	}
	from, fromText := day(listCreatedFrom, "Created from")
	to, toText := day(listCreatedTo, "Created to")
	p.CreatedFrom, p.CreatedTo = fromText, toText
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		bad(listCreatedTo, "Created to must be on or after created from.")
	}
	return from, to
}

// readOrder reads the column the list is sorted by and its direction.
func (p *campaignListParams) readOrder(args *fasthttp.Args, bad func(field, msg string)) {
	if v := string(args.Peek(listSort)); v != "" {
		if !slices.Contains(persistence.CampaignSorts(), v) {
			bad(listSort, "Sort must be one of the columns: "+strings.Join(persistence.CampaignSorts(), ", ")+".")
		} else {
			p.Sort = v
		}
	}
	switch string(args.Peek(listDir)) {
	case "", "asc":
	case "desc":
		p.Desc = true
	default:
		bad(listDir, "Direction must be asc or desc.")
	}
}

// readPaging reads the page shown and the rows per page.
func (p *campaignListParams) readPaging(args *fasthttp.Args, bad func(field, msg string)) {
	for _, f := range []struct {
		name, label string
		v           *int
		ok          func(int) bool
		rule        string
	}{
		{listPage, "Page", &p.Page, func(n int) bool { return n >= 1 }, "a whole number from 1"},
		{listPerPage, "Per page", &p.PerPage, func(n int) bool { return slices.Contains(listPerPages, n) }, "25, 50, 100 or 200"},
	} {
		v := string(args.Peek(f.name))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || !f.ok(n) {
			bad(f.name, f.label+" must be "+f.rule+".")
			continue
		}
		*f.v = n
	}
}

// values is the query of p with the given parameters changed (name, value, ...; "" drops).
func (p campaignListParams) values(change ...string) url.Values {
	v := url.Values{}
	if p.Search != "" {
		v.Set(listSearch, p.Search)
	}
	for _, s := range p.Statuses {
		v.Add(listStatus, strconv.Itoa(s))
	}
	if p.Country != 0 {
		v.Set(listCountry, strconv.Itoa(p.Country))
	}
	if p.CreatedFrom != "" {
		v.Set(listCreatedFrom, p.CreatedFrom)
	}
	if p.CreatedTo != "" {
		v.Set(listCreatedTo, p.CreatedTo)
	}
	if p.Sort != persistence.CampaignSortID {
		v.Set(listSort, p.Sort)
	}
	if p.Desc {
		v.Set(listDir, "desc")
	}
	if p.PerPage != defaultListPerPage {
		v.Set(listPerPage, strconv.Itoa(p.PerPage))
	}
	if p.Page > 1 {
		v.Set(listPage, strconv.Itoa(p.Page))
	}
	for i := 0; i+1 < len(change); i += 2 {
		if change[i+1] == "" {
			v.Del(change[i])
		} else {
			v.Set(change[i], change[i+1])
		}
	}
	return v
}

// link is the list's URL at path with p's query, changed as values says.
func (p campaignListParams) link(path string, change ...string) string {
	if q := p.values(change...).Encode(); q != "" {
		return path + "?" + q
	}
	return path
}

// listColumn is a sortable column heading of the list.
type listColumn struct {
	Label, Sort string
	Href        string // sorts by it (ascending, or descending when it already sorts ascending)
	AriaSort    string // ascending, descending, or "" when the list is not sorted by it
}

// listChoice is one option of a filter.
type listChoice struct {
	Value, Label string
	Selected     bool
}

// listRow is one campaign of the list as shown.
type listRow struct {
	persistence.CampaignListRow
	Spend string
}

// campaignsPage is the buyer's campaign list.
type campaignsPage struct {
	consoleBase
	P               campaignListParams
	Columns         []listColumn
	Sorts           []listChoice
	Statuses        []listChoice
	Countries       []listChoice
	PerPages        []listChoice
	Rows            []listRow
	Total           int64
	First, Last     int64 // the rows shown, from 1
	Pages           int64
	Prev, Next, CSV string
	Invalid         bool // a parameter is bad: nothing is listed
	HasAnyCampaign  bool
	SortLabel       string
}

// listColumns are the list's columns in order: their label and sort.
var listColumns = []struct{ label, sort string }{
	{"Campaign", persistence.CampaignSortName}, {"Status", persistence.CampaignSortStatus},
	{"Country", persistence.CampaignSortCountry}, {"Created", persistence.CampaignSortCreated},
	{"Start", persistence.CampaignSortStart}, {"End", persistence.CampaignSortEnd},
	{"Fill", persistence.CampaignSortFill}, {"Completes", persistence.CampaignSortCompletes},
	{"Spend", persistence.CampaignSortSpend}, {"CPI", persistence.CampaignSortCPI},
}

func (a *campaignPages) consoleCampaigns(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	countries, err := a.catalog.CountryLanguages(dbContext(ctx))
	if err != nil {
		return err
	}
	p, q, errs := readListParams(ctx.QueryArgs(), countries)
	page := &campaignsPage{consoleBase: s.base("Campaigns"), P: p, Invalid: len(errs) > 0}
	page.Errors = errs
	for _, c := range listColumns {
		col := listColumn{Label: c.label, Sort: c.sort, Href: p.link(ConsolePrefix+"/campaigns", listSort, c.sort, listDir, "", listPage, "")}
		if p.Sort == c.sort {
			page.SortLabel = c.label
			col.AriaSort = "ascending"
			if p.Desc {
				col.AriaSort = "descending"
			} else {
				col.Href = p.link(ConsolePrefix+"/campaigns", listSort, c.sort, listDir, "desc", listPage, "")
			}
		}
		page.Columns = append(page.Columns, col)
	}
	if page.SortLabel == "" {
		page.SortLabel = "Id"
	}
	for _, st := range listStatuses {
		page.Statuses = append(page.Statuses, listChoice{Value: strconv.Itoa(st), Label: statusLabel(st), Selected: slices.Contains(p.Statuses, st)})
	}
	for _, c := range countries {
		page.Countries = append(page.Countries, listChoice{Value: strconv.Itoa(c.ID), Label: c.Abbr, Selected: c.ID == p.Country})
	}
	for _, c := range append([]struct{ label, sort string }{{"Id", persistence.CampaignSortID}}, listColumns...) {
		page.Sorts = append(page.Sorts, listChoice{Value: c.sort, Label: c.label, Selected: c.sort == p.Sort})
	}
	for _, n := range listPerPages {
		page.PerPages = append(page.PerPages, listChoice{Value: strconv.Itoa(n), Label: strconv.Itoa(n), Selected: n == p.PerPage})
	}
	status := fasthttp.StatusOK
	if page.Invalid {
		status = fasthttp.StatusUnprocessableEntity
		a.render(ctx, status, "campaigns", page)
		return nil
	}
	rows, total, err := a.store.CampaignList(dbContext(ctx), s.Buyer.ID, q)
	if err != nil {
		return err
	}
	page.Total = total
	for _, r := range rows {
		page.Rows = append(page.Rows, listRow{CampaignListRow: r, Spend: spendText(r.Spend)})
	}
	page.Pages = max(1, (total+int64(p.PerPage)-1)/int64(p.PerPage))
	if len(rows) > 0 {
		page.First = int64(p.Page-1)*int64(p.PerPage) + 1
		page.Last = page.First + int64(len(rows)) - 1
	}
	if p.Page > 1 {
		page.Prev = p.link(ConsolePrefix+"/campaigns", listPage, strconv.FormatInt(min(int64(p.Page-1), page.Pages), 10))
	}
	if int64(p.Page) < page.Pages {
		page.Next = p.link(ConsolePrefix+"/campaigns", listPage, strconv.Itoa(p.Page+1))
	}
	page.CSV = p.link(ConsolePrefix+"/campaigns.csv", listPage, "", listPerPage, "")
	page.HasAnyCampaign = total > 0 || p.filtered()
	a.render(ctx, status, "campaigns", page)
	return nil
}

// filtered reports whether p keeps only some campaigns.
func (p campaignListParams) filtered() bool {
	return p.Search != "" || len(p.Statuses) > 0 || p.Country != 0 || p.CreatedFrom != "" || p.CreatedTo != ""
}

// spendText formats a spend in ten-thousandths of a USD as dollars and cents.
func spendText(u int64) string {
	return persistence.Cents((u + 50) / 100).String()
}

// consoleCampaignsCSV answers the whole list of the same query parameters (paging aside) as
// CSV; a bad parameter is a 422 page naming it.
func (a *campaignPages) consoleCampaignsCSV(ctx *fasthttp.RequestCtx, s *consoleSession) error {
	countries, err := a.catalog.CountryLanguages(dbContext(ctx))
	if err != nil {
		return err
	}
	_, q, errs := readListParams(ctx.QueryArgs(), countries)
	if len(errs) > 0 {
		a.message(ctx, fasthttp.StatusUnprocessableEntity, "Not exported", errs[0].Message)
		return nil
	}
	q.Page, q.PerPage = 1, 0
	rows, _, err := a.store.CampaignList(dbContext(ctx), s.Buyer.ID, q)
	if err != nil {
		return err
	}
	day := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	out := [][]string{{"id", "name", "status", "country_language", "cpi_usd", "created_at", "start_at", "end_at", "end_planned",
		"target", "filled", "completes", "spend_usd", "spend_from"}}
	for _, r := range rows {
		from := "cpi_x_completes"
		if r.SpendFromLedger {
			from = "ledger"
		}
		out = append(out, []string{strconv.FormatInt(r.ID, 10), r.Name, statusLabel(r.Status), r.CountryLanguage, r.CPI.String(),
			day(&r.CreatedAt), day(r.Start), day(r.End), strconv.FormatBool(r.EndPlanned), strconv.FormatInt(r.Target, 10),
			strconv.FormatInt(r.Filled, 10), strconv.FormatInt(r.Completes, 10), payout.USD(r.Spend).String(), from})
	}
	writeCSV(ctx, "campaigns.csv", out)
	return nil
}
