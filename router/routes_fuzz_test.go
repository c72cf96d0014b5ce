package router_test

import (
	"net/url"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
)

// FuzzRespondentRoutes sends any query (and path id) to the routes a respondent's browser
// reaches without credentials — entry links, callbacks, redirect tests, the hosted
// pre-screener — through the real server and database: none may answer a 5xx.
func FuzzRespondentRoutes(f *testing.F) {
	s := apptest.Start(f, apptest.Options{RateLimit: -1})
	b := s.NewBuyer(f)
	routes := []string{
		"/supply_api/v4/entry?",
		"/router/customers/" + b.CustomerID + "/cps/complete?",
		"/router/customers/%00/cps/complete?",
		"/router/test/1?",
		"/router/test/99999999999999999999?",
		"/router/prescreen?",
	}
	for i := range routes {
		for _, q := range []string{"token=%00", "token=%ff", "tid=%00", "tid=%ff&tr_sech=0000000000000000000000000000000000000000",
			"sig=%00", "token=" + "eyJ4IjoxfQ.AAAA", "tid=1&tr_sech=bad", "token=99999999999999999999999"} {
			f.Add(uint8(i), q)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		path := routes[int(route)%len(routes)] + query
		if _, err := url.Parse(s.URL + path); err != nil { // what the client will parse
			path = routes[int(route)%len(routes)] + "token=" + url.QueryEscape(query)
		}
		resp, err := s.Try(s.NewRequest(t, "GET", path, nil))
		if err != nil {
			t.Skip("the client refused the request:", err)
		}
		if resp.Status >= 500 {
			t.Fatalf("GET %s: %d %s", path, resp.Status, resp.Body)
		}
	})
}
