package admin

import (
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// FuzzCampaignListParams: any query string either reads as a campaign list query within
// its bounds, or is refused with errors that each name a parameter of the list; a query
// read is written back by its links (values) as one that reads the same.
func FuzzCampaignListParams(f *testing.F) {
	for _, s := range []string{"", "q=streaming&status=2&status=5&country_language_id=1&created_from=2026-03-01&created_to=2026-03-31&sort=spend&dir=desc&page=3&per_page=25",
		"status=9", "status=2&status=2", "q=%ff", "q=%00", "created_from=2026-02-30", "created_from=2026-03-05&created_to=2026-03-01",
		"sort=bogus", "dir=up", "page=0", "page=99999999999999999999", "per_page=7", "country_language_id=999", "q=%25_%5C",
		"created_to=0999-01-01", "page=-1&per_page=200"} {
		f.Add(s)
	}
	countries := []persistence.CountryLanguage{{ID: 1, Abbr: "en-US"}, {ID: 2, Abbr: "es-US"}}
	params := []string{listSearch, listStatus, listCountry, listCreatedFrom, listCreatedTo, listSort, listDir, listPage, listPerPage}
	f.Fuzz(func(t *testing.T, raw string) {
		var args fasthttp.Args
		args.Parse(raw)
		p, q, errs := readListParams(&args, countries)
		if len(errs) > 0 {
			for _, e := range errs {
				if !slices.Contains(params, e.Field) || e.Message == "" {
					t.Fatalf("%q: error %+v names no parameter", raw, e)
				}
			}
			return
		}
		if !httpio.ValidText(q.Search) || utf8.RuneCountInString(q.Search) > maxListSearch ||
			!slices.Contains(persistence.CampaignSorts(), q.Sort) || q.Page < 1 || !slices.Contains(listPerPages, q.PerPage) ||
			q.CountryLanguageID != 0 && q.CountryLanguageID != 1 && q.CountryLanguageID != 2 ||
			!q.CreatedFrom.IsZero() && !q.CreatedBefore.IsZero() && !q.CreatedBefore.After(q.CreatedFrom) {
			t.Fatalf("%q read as %+v", raw, q)
		}
		for _, s := range q.Statuses {
			if !slices.Contains(listStatuses, s) {
				t.Fatalf("%q: status %d", raw, s)
			}
		}
		var again fasthttp.Args
		again.Parse(p.values().Encode())
		p2, q2, errs := readListParams(&again, countries)
		if len(errs) > 0 || !reflect.DeepEqual(p, p2) || !reflect.DeepEqual(q, q2) {
			t.Fatalf("%q: written back as %q, read as %+v (%v), was %+v", raw, p.values().Encode(), p2, errs, p)
		}
	})
}
