package supply

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/supply/partners"
)

// The hosted pages are opened by the participant's browser: they carry no X-Api-Token and
// are authorized by their signed token instead (403 when missing, forged or expired). Forms
// post the token back with a CSRF value bound to it (internal/pagekit).

// hostedPages serves the hosted profiler and support pages.
type hostedPages struct {
	key       *entrytoken.Key
	partners  *partners.Directory
	panel     *engine.Panel
	catalog   *catalog     // the qualifications a profile is validated against (catalog.go)
	texts     *pageCatalog // the profiler's texts (pages_catalog.go)
	support   supportStore
	publicURL string
	now       func() int64
	log       *zap.Logger
	// impanel stores a profile like POST /players/impanel (API.storeImpanel).
	impanel func(pub *partners.Publisher, user, device []byte, cc *countryCatalog, answers []persistence.ProfileAnswer, attrs map[string]any) error
}

// register mounts the pages' routes on mux.
func (h *hostedPages) register(mux *httpio.Mux) {
	mux.Handle("GET", Prefix+"/profile", h.profilePage)
	mux.Handle("POST", Prefix+"/profile", h.profileSubmit)
	mux.Handle("GET", "/support", h.supportPageGet)
	mux.Handle("POST", "/support", h.supportSubmit)
}

// StatusProfiled is the status of the partner redirect after the hosted profiler (reward 0,
// no tid), signed like every other partner redirect (docs/supply.md).
const StatusProfiled = "profiled"

// pageToken verifies the token of a page request (the form field on a post, else the query)
// and its publisher; on failure it answers the 403 page.
func (h *hostedPages) pageToken(ctx *fasthttp.RequestCtx, kind uint8) (string, entrytoken.Claims, *partners.Publisher, bool) {
	token := pagekit.FormToken(ctx)
	c, err := h.key.Verify(token, h.now())
	var pub *partners.Publisher
	if err == nil && c.Kind == kind {
		pub = h.partners.ByID(c.PublisherID)
	}
	if pub == nil {
		pagekit.Forbidden(ctx, h.log)
		return "", c, nil, false
	}
	return token, c, pub, true
}

// supportToken signs the support_url token of a page's participant.
func (h *hostedPages) supportURL(c entrytoken.Claims) string {
	c.Kind, c.Nonce, c.Expires = entrytoken.KindSupport, entrytoken.NewNonce(), h.now()+entrytoken.TTL
	return h.publicURL + "/support?token=" + h.key.Sign(c)
}

// --- profiler ---

type countryChoice struct {
	ID      int32
	Name    string
	Lang    string
	Checked bool
}

type countryPage struct {
	pagekit.Base
	Action    string
	Token     string
	Countries []countryChoice
	Error     string
}

type profilePage struct {
	pagekit.Base
	Action           string
	Token            string
	CSRF             string
	CountryID        int32
	CountryName      string
	ChangeCountryURL string
	Questions        []pagekit.Question
}

// profileCountry picks the country of the profiler: the one chosen (country=), else the
// participant's when already impaneled, else the region of the browser's languages. It is
// nil when the participant has to choose; invalid when a choice was sent that is no country.
func (h *hostedPages) profileCountry(ctx *fasthttp.RequestCtx, known *engine.Participant) (c *pageCountry, invalid bool) {
	args := ctx.QueryArgs()
	if ctx.IsPost() {
		args = ctx.PostArgs()
	}
	if raw := args.Peek("country"); len(raw) > 0 {
		id, err := strconv.ParseInt(string(raw), 10, 32)
		if c := h.texts.byID[int32(id)]; err == nil && c != nil {
			return c, false
		}
		return nil, true
	}
	switch string(args.Peek("choose")) {
	case "1": // the "change country" link
		return nil, false
	case "2": // the country form, sent without a choice
		return nil, true
	}
	if known != nil {
		if c := h.texts.byID[known.CountryID]; c != nil {
			return c, false
		}
	}
	for _, tag := range pagekit.AcceptLanguage(ctx) {
		if c := h.texts.byISO[pagekit.RegionOf(tag)]; c != nil {
			return c, false
		}
	}
	return nil, false
}

// profilePage is GET /supply_api/v4/profile?token=: the hosted profiler of integration path 2
// (a profile token from GET /campaigns). It first asks the country when it cannot tell it.
func (h *hostedPages) profilePage(ctx *fasthttp.RequestCtx) {
	token, claims, pub, ok := h.pageToken(ctx, entrytoken.KindProfile)
	if !ok {
		return
	}
	known, _ := h.panel.Get(pub.ID, claims.UserID)
	country, invalid := h.profileCountry(ctx, known)
	if country == nil {
		h.renderCountries(ctx, token, claims, invalid)
		return
	}
	page := h.newProfilePage(token, claims, pub, country)
	if known != nil && known.CountryID == country.id {
		prefill(page.Questions, known)
	}
	pagekit.Render(ctx, h.log, fasthttp.StatusOK, "profile", pagekit.CSP(pagekit.Origin(pub.RedirectURL)), page)
}

func (h *hostedPages) renderCountries(ctx *fasthttp.RequestCtx, token string, claims entrytoken.Claims, invalid bool) {
	lang := pagekit.Negotiate(ctx)
	t := pagekit.Lookup(lang)
	page := &countryPage{Base: pagekit.Base{Lang: lang, T: t, Title: t["country_title"], SupportURL: h.supportURL(claims)},
		Action: Prefix + "/profile", Token: token}
	for _, c := range h.texts.countries {
		page.Countries = append(page.Countries, countryChoice{ID: c.id, Name: c.name, Lang: c.lang})
	}
	status := fasthttp.StatusOK
	if invalid {
		status = fasthttp.StatusUnprocessableEntity
		page.Error = t["err_country"]
		page.Errors = []pagekit.FieldError{{Field: "country-" + strconv.Itoa(int(page.Countries[0].ID)), Message: t["err_country"]}}
	}
	pagekit.Render(ctx, h.log, status, "country", "", page)
}

func (h *hostedPages) newProfilePage(token string, claims entrytoken.Claims, pub *partners.Publisher, c *pageCountry) *profilePage {
	t := pagekit.Lookup(c.lang)
	page := &profilePage{
		Base:   pagekit.Base{Lang: c.lang, T: t, Title: t["profile_title"], SupportURL: h.supportURL(claims)},
		Action: Prefix + "/profile", Token: token, CSRF: pagekit.CSRF(h.key, pagekit.FormProfile, token),
		CountryID: c.id, CountryName: c.name,
		ChangeCountryURL: Prefix + "/profile?token=" + token + "&choose=1",
	}
	for _, pq := range c.questions {
		q := pagekit.Question{T: t, ID: int64(pq.q.id), Text: pq.text, Kind: pq.kind, Required: pq.q.required}
		for _, an := range pq.answers {
			q.AddOption(an.PreCode, an.OptionText)
		}
		page.Questions = append(page.Questions, q)
	}
	return page
}

// prefill shows the answers an impaneled participant gave before.
func prefill(questions []pagekit.Question, p *engine.Participant) {
	for i := range questions {
		q := &questions[i]
		for _, an := range p.Answers {
			if int64(an.QuestionID) != q.ID {
				continue
			}
			switch {
			case q.Choice():
				vals := make([]string, len(an.Codes))
				for j, c := range an.Codes {
					vals[j] = strconv.Itoa(int(c))
				}
				q.Fill(vals)
			case q.Kind == pagekit.KindAge && len(an.Codes) > 0:
				q.Value = strconv.Itoa(int(an.Codes[0]))
			default:
				q.Value = an.Text
			}
		}
	}
}

// profileSubmit is POST /supply_api/v4/profile: the profiler's answers, validated by the
// impanel's own rules and impaneled through the same path as POST /players/impanel. Then the
// participant goes back to the partner: 303 to the redirect URL with status=profiled,
// reward=0, signed.
func (h *hostedPages) profileSubmit(ctx *fasthttp.RequestCtx) {
	token, claims, pub, ok := h.pageToken(ctx, entrytoken.KindProfile)
	if !ok {
		return
	}
	known, _ := h.panel.Get(pub.ID, claims.UserID)
	country, _ := h.profileCountry(ctx, known)
	lang := pagekit.Negotiate(ctx)
	if country != nil {
		lang = country.lang
	}
	if !pagekit.CheckPost(ctx, h.key, pagekit.FormProfile, token, h.publicURL) {
		pagekit.FormExpired(ctx, h.log, lang)
		return
	}
	if country == nil {
		h.renderCountries(ctx, token, claims, true)
		return
	}
	cc := h.catalog.byCountry[country.id]
	page := h.newProfilePage(token, claims, pub, country)
	t := page.T
	answers := make([]persistence.ProfileAnswer, 0, len(country.questions))
	for i, pq := range country.questions {
		q := &page.Questions[i]
		vals := pagekit.PostValues(ctx, q.Name())
		q.Fill(vals)
		nonEmpty := vals[:0:0]
		for _, v := range vals {
			if v = strings.TrimSpace(v); v != "" {
				nonEmpty = append(nonEmpty, v)
			}
		}
		if len(nonEmpty) == 0 {
			if pq.q.required {
				q.Error = t["err_required"]
			}
			continue
		}
		raw, ok := rawValues(q.Choice(), nonEmpty)
		var ans persistence.ProfileAnswer
		var err error
		if ok {
			ans, err = pq.q.parseValues("q"+strconv.Itoa(int(pq.q.id)), raw)
		}
		if !ok || err != nil {
			switch q.Kind {
			case pagekit.KindAge:
				q.Error = t["err_age"]
			case pagekit.KindSingle, pagekit.KindMulti:
				q.Error = t["err_choice"]
			default:
				q.Error = t["err_text"]
			}
			continue
		}
		answers = append(answers, ans)
	}
	if page.Errors = pagekit.Summary(page.Questions); len(page.Errors) > 0 {
		pagekit.Render(ctx, h.log, fasthttp.StatusUnprocessableEntity, "profile", pagekit.CSP(pagekit.Origin(pub.RedirectURL)), page)
		return
	}
	user := []byte(claims.UserID)
	if len(user) == 0 {
		pagekit.Forbidden(ctx, h.log)
		return
	}
	if err := h.impanel(pub, user, []byte(claims.DeviceID), cc, answers, nil); err != nil {
		pagekit.Failure(ctx, h.log, lang, err)
		return
	}
	pagekit.SeeOther(ctx, payout.RedirectURL(pub.Publisher, payout.Fields{Status: StatusProfiled}))
}

// rawValues encodes posted values as the JSON values impanel's profile_data takes: integers
// for select questions (false when one is not), strings otherwise.
func rawValues(choice bool, vals []string) (json.RawMessage, bool) {
	if choice {
		b := []byte{'['}
		for i, v := range vals {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil {
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, n, 10)
		}
		return append(b, ']'), true
	}
	b, err := json.Marshal(vals)
	return b, err == nil
}
