package supply_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/persistence/pgtest"
	"github.com/switchboard/switchboard/supply"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// partner is a registered publisher talking to one server.
type partner struct {
	s      *apptest.Server
	ID     int64
	Token  string
	Secret string
	Share  float64
	Rate   float64
}

func newPartner(t testing.TB, s *apptest.Server) *partner {
	t.Helper()
	ctx := context.Background()
	p, tok, err := s.DB.Accounts.CreatePublisher(ctx, persistence.NewPublisher{Name: "Game Co", CurrencyName: `Gems "blue"`,
		ExchangeRate: 100, RevenueShare: 0.5, RedirectURL: "https://partner.test/back", Environment: s.Env})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.App.Supply.ReloadPublishers(ctx); err != nil {
		t.Fatal(err)
	}
	return &partner{s: s, ID: p.ID, Token: tok, Secret: p.APISecret, Share: 0.5, Rate: 100}
}

// on returns the same publisher talking to another server of the deployment.
func (p *partner) on(t *testing.T, s *apptest.Server) *partner {
	t.Helper()
	if err := s.App.Supply.ReloadPublishers(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := *p
	q.s = s
	return &q
}

func (p *partner) do(t *testing.T, method, path string, headers map[string]string, body any) apptest.Response {
	t.Helper()
	req := p.s.NewRequest(t, method, path, body)
	if p.Token != "" {
		req.Header.Set("X-Api-Token", p.Token)
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return p.s.Send(t, req)
}

var userSeq atomic.Int64

func newUser() string { return fmt.Sprintf("user-%d-%d", time.Now().UnixNano(), userSeq.Add(1)) }

// impanelBody builds a signed impanel body.
func (p *partner) impanelBody(user string, country int, profile []map[string]any) map[string]any {
	ts := time.Now().Unix()
	b := map[string]any{"country_id": country, "ts": ts, "sech": supply.Sech(p.Secret, user, ts)}
	if profile != nil {
		b["profile_data"] = profile
	}
	return b
}

func (p *partner) impanelRaw(t *testing.T, user, device string, body any) apptest.Response {
	t.Helper()
	return p.do(t, "POST", "/supply_api/v4/players/impanel", map[string]string{"X-User-Identifier": user, "X-Device-Identifier": device}, body)
}

// impanel registers user in country with answers and expects success.
func (p *partner) impanel(t *testing.T, user string, country int, profile ...map[string]any) {
	t.Helper()
	r := p.impanelRaw(t, user, "", p.impanelBody(user, country, profile))
	r.Expect(t, 200)
	if string(r.Body) != `{"success":true}` {
		t.Fatalf("impanel body %s", r.Body)
	}
}

func answer(q int, values ...any) map[string]any {
	return map[string]any{"question_id": q, "values": values}
}

// usProfile is a complete US profile: age, gender, zip.
func usProfile(age int, gender int, zip string, more ...map[string]any) []map[string]any {
	return append([]map[string]any{answer(42, age), answer(43, gender), answer(45, zip)}, more...)
}

type survey struct {
	Identifier      string  `json:"identifier"`
	LengthInMinutes int     `json:"length_in_minutes"`
	ConversionRate  int     `json:"conversion_rate"`
	RewardAmount    int     `json:"reward_amount"`
	EPC             float64 `json:"epc"`
	CurrencyName    string  `json:"currency_name"`
	OfferEntryURL   string  `json:"offer_entry_url"`
	IsHotTile       bool    `json:"is_hot_tile"`
	SupportURL      string  `json:"support_url"`
}

type offers struct {
	Surveys     []survey `json:"surveys"`
	Eligibility struct {
		IsEligible bool   `json:"is_eligible"`
		Reason     int    `json:"reason"`
		Comment    string `json:"comment"`
	} `json:"player_eligibility"`
}

func (o offers) ids() []string {
	out := make([]string, len(o.Surveys))
	for i, s := range o.Surveys {
		out[i] = s.Identifier
	}
	return out
}

func (o offers) has(id int64) bool {
	for _, s := range o.Surveys {
		if s.Identifier == strconv.FormatInt(id, 10) {
			return true
		}
	}
	return false
}

func (p *partner) campaignsRaw(t *testing.T, user, device string, query string) apptest.Response {
	t.Helper()
	return p.do(t, "GET", "/supply_api/v4/campaigns?"+query, map[string]string{"X-User-Identifier": user, "X-Device-Identifier": device}, nil)
}

func (p *partner) campaigns(t *testing.T, user, device string, deviceType int) offers {
	t.Helper()
	r := p.campaignsRaw(t, user, device, "user_ip=73.15.20.9&device_type="+strconv.Itoa(deviceType))
	r.Expect(t, 200)
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("content type %q", ct)
	}
	var o offers
	r.Decode(t, &o)
	return o
}

func errorOf(t *testing.T, r apptest.Response) string {
	t.Helper()
	var e struct {
		Error *string `json:"error"`
	}
	r.Decode(t, &e)
	if e.Error == nil {
		t.Fatalf("no error in %d body %s", r.Status, r.Body)
	}
	return *e.Error
}

func expectError(t *testing.T, r apptest.Response, status int, contains string) {
	t.Helper()
	r.Expect(t, status)
	if msg := errorOf(t, r); !strings.Contains(strings.ToLower(msg), strings.ToLower(contains)) {
		t.Fatalf("error %q does not mention %q", msg, contains)
	}
}

// market creates campaigns straight in the database and announces them.
type market struct {
	t       *testing.T
	s       *apptest.Server
	buyerID int64
	project int64
}

func newMarket(t *testing.T, s *apptest.Server) *market {
	t.Helper()
	b := s.NewBuyer(t)
	m := &market{t: t, s: s, buyerID: b.ID}
	if err := s.DB.Pool.QueryRow(context.Background(), `INSERT INTO projects (buyer_id, name) VALUES ($1, 'p') RETURNING id`, b.ID).Scan(&m.project); err != nil {
		t.Fatal(err)
	}
	return m
}

// campaignSpec describes a campaign to insert; zero values take sensible defaults.
type campaignSpec struct {
	Status          int
	CountryLanguage int
	CPICents        int
	LOI, Incidence  int
	Devices         []int
	MaxDaily        *int
	Reentry         *int // minutes; nil: never twice
	Quotas          []quotaSpec
}

type quotaSpec struct {
	Num    int
	Global bool
	Quals  []qualSpec
}

type qualSpec struct {
	Q     int
	Codes []int
	Texts []string
}

func (m *market) create(c campaignSpec) int64 {
	m.t.Helper()
	if c.Status == 0 {
		c.Status = 2
	}
	if c.CountryLanguage == 0 {
		c.CountryLanguage = 1
	}
	if c.CPICents == 0 {
		c.CPICents = 200
	}
	if c.LOI == 0 {
		c.LOI = 10
	}
	if c.Incidence == 0 {
		c.Incidence = 50
	}
	if c.Devices == nil {
		c.Devices = []int{}
	}
	if c.Quotas == nil {
		c.Quotas = []quotaSpec{{Num: 100}}
	}
	ctx := context.Background()
	var id int64
	err := m.s.DB.Pool.QueryRow(ctx, `INSERT INTO campaigns (buyer_id, project_id, name, cpi_cents, incidence, status,
		length_of_interview, supplier_link, country_language_id, supported_devices, max_daily_completes, reentry_interval)
		VALUES ($1,$2,'c',$3,$4,$5,$6,'https://survey.test/s?id={ID}',$7,$8,$9,$10) RETURNING id`,
		m.buyerID, m.project, c.CPICents, c.Incidence, c.Status, c.LOI, c.CountryLanguage, c.Devices, c.MaxDaily, c.Reentry).Scan(&id)
	if err != nil {
		m.t.Fatal(err)
	}
	for _, q := range c.Quotas {
		var qid int64
		if err := m.s.DB.Pool.QueryRow(ctx, `INSERT INTO campaign_quotas (campaign_id, num_respondents, is_global) VALUES ($1,$2,$3) RETURNING id`,
			id, q.Num, q.Global).Scan(&qid); err != nil {
			m.t.Fatal(err)
		}
		for _, ql := range q.Quals {
			codes, texts := ql.Codes, ql.Texts
			if codes == nil {
				codes = []int{}
			}
			if texts == nil {
				texts = []string{}
			}
			if _, err := m.s.DB.Pool.Exec(ctx, `INSERT INTO quota_qualifications (quota_id, question_id, pre_codes, text_values) VALUES ($1,$2,$3,$4)`,
				qid, ql.Q, codes, texts); err != nil {
				m.t.Fatal(err)
			}
		}
	}
	m.announce(id)
	return id
}

// exec runs SQL and announces the campaign it changed.
func (m *market) exec(campaign int64, sql string, args ...any) {
	m.t.Helper()
	if _, err := m.s.DB.Pool.Exec(context.Background(), sql, args...); err != nil {
		m.t.Fatal(err)
	}
	m.announce(campaign)
}

func (m *market) announce(id int64) {
	m.t.Helper()
	if _, err := m.s.DB.Pool.Exec(context.Background(), `SELECT pg_notify($1, $2)`, persistence.CampaignChannel, strconv.FormatInt(id, 10)); err != nil {
		m.t.Fatal(err)
	}
}

// eventually polls cond every 20 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 5*time.Second {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
	return 0
}

// waitEngine waits until the server's engine has (or has not) the campaign indexed.
func waitEngine(t *testing.T, s *apptest.Server, id int64, present bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("campaign %d indexed=%v", id, present), func() bool {
		_, ok := s.App.Engine.Snapshot().Campaign(id)
		return ok == present
	})
}

func tokenOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}

func get(t *testing.T, s *apptest.Server, rawURL string) apptest.Response {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("GET", s.URL+u.RequestURI(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.Send(t, req)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }

func pgtestCluster(t *testing.T) interface {
	Stop(context.Context) error
	Start(context.Context) error
} {
	return pgtest.Cluster(t)
}
