package supply_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/supply"
)

// FuzzSupplyRoutes sends any impanel body and any query to the supply routes that parse
// them (and to the demo partner's page), through the real server and database: nothing a
// partner or a participant's browser sends may make a 5xx.
// A body is signed when sign is set, so that the fuzzer reaches the validation past sech.
func FuzzSupplyRoutes(f *testing.F) {
	demo := &supply.DemoPartner{Currency: "coins"}
	s := apptest.Start(f, apptest.Options{RateLimit: -1, Configure: func(c *app.Config) { c.DemoPartner = demo }})
	p := newPartner(f, s)
	demo.Secret = p.Secret
	for _, seed := range []struct {
		route uint8
		in    string
	}{
		{0, `"country_id":1,"profile_data":[{"question_id":42,"values":[30]},{"question_id":43,"values":[1]},{"question_id":45,"values":["9\u00001"]}]`},
		{0, "\"country_id\":1,\"attributes_hash\":{\"k\xff\":\"v\"}"},
		{0, `"country_id":2147483648,"attributes_hash":{"n":1e999999}`},
		{0, `"country_id":1,"profile_data":[{"question_id":99999999999,"values":[1e400]}]`},
		{1, `%00`}, {1, `%ff`}, {1, `99999999999999999999`},
		{2, `user_ip=1.2.3.4&device_type=%00`}, {2, `user_ip=%ff&device_type=1`}, {2, `user_ip=8.8.8.8&device_type=99999999999`},
		{3, `from=2026-01-01T00:00:00Z&to=2026-01-31T00:00:00%2B99:00`}, {3, `from=%ff&to=0000-00-00T00:00:00Z`},
		{4, `status=failed&limit=99999999999999999999&before_id=-9223372036854775808`},
		{4, `status=pending,retrying,dead,`}, {4, `status=%2C`},
		{5, `tid=t%ff&status=complete&reward=99999999999999999999&sech=00`}, {5, `status=%00&attempts=-1&sech=`},
		{6, `month=2026-01`}, {6, `month=9999-12&month=0000-00`}, {6, `month=%ff`},
	} {
		f.Add(seed.route, seed.in, true)
	}
	f.Fuzz(func(t *testing.T, route uint8, in string, sign bool) {
		const user = "fuzz-user"
		var path string
		var body any
		switch route % 7 {
		case 0:
			ts := time.Now().Unix()
			sech := "00"
			if sign {
				sech = supply.Sech(p.Secret, user, ts)
			}
			path = "/supply_api/v4/players/impanel"
			body = `{"ts":` + itoa(ts) + `,"sech":"` + sech + `",` + in + `}`
		case 1:
			path = "/supply_api/v4/qualifications?country_id=" + in
		case 2:
			path = "/supply_api/v4/campaigns?" + in
		case 3:
			path = "/supply_api/v4/stats?" + in
		case 4:
			path = "/supply_api/v4/postbacks?" + in
		case 5:
			path = supply.DemoPartnerPath + "?" + in
		case 6:
			path = "/supply_api/v4/statements?" + in
		}
		if _, err := url.Parse(s.URL + path); err != nil { // what the client will parse
			path = "/supply_api/v4/qualifications?country_id=" + url.QueryEscape(in)
		}
		req := s.NewRequest(t, methodOf(body), path, body)
		req.Header.Set("X-Api-Token", p.Token)
		req.Header.Set("X-User-Identifier", user)
		resp, err := s.Try(req)
		if err != nil {
			t.Skip("the client refused the request:", err)
		}
		if resp.Status >= 500 {
			t.Fatalf("%s %q: %d %s", path, in, resp.Status, resp.Body)
		}
	})
}

func methodOf(body any) string {
	if body != nil {
		return "POST"
	}
	return "GET"
}
