package supply

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// The hosted pages are opened by the participant's browser: they carry no X-Api-Token and
// are authorized by their signed token instead (403 when missing, forged or expired). Forms
// post the token back with a CSRF value bound to it (internal/pagekit).

// StatusProfiled is the status of the partner redirect after the hosted profiler (reward 0,
// no tid), signed like every other partner redirect (docs/supply.md).
const StatusProfiled = "profiled"

// pageToken verifies the token of a page request (the form field on a post, else the query)
// and its publisher; on failure it answers the 403 page.
func (a *API) pageToken(ctx *fasthttp.RequestCtx, kind uint8) (string, entrytoken.Claims, *publisher, bool) {
	token := pagekit.FormToken(ctx)
	c, err := a.key.Verify(token, a.now())
	var pub *publisher
	if err == nil && c.Kind == kind {
		pub = a.pubs.byID(c.PublisherID)
	}
	if pub == nil {
		pagekit.Forbidden(ctx, a.log)
		return "", c, nil, false
	}
	return token, c, pub, true
}

// supportToken signs the support_url token of a page's participant.
func (a *API) supportURL(c entrytoken.Claims) string {
	c.Kind, c.Nonce, c.Expires = entrytoken.KindSupport, entrytoken.NewNonce(), a.now()+entrytoken.TTL
	return a.cfg.PublicURL + "/support?token=" + a.key.Sign(c)
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
func (a *API) profileCountry(ctx *fasthttp.RequestCtx, known *engine.Participant) (c *pageCountry, invalid bool) {
	args := ctx.QueryArgs()
	if ctx.IsPost() {
		args = ctx.PostArgs()
	}
	if raw := args.Peek("country"); len(raw) > 0 {
		id, err := strconv.ParseInt(string(raw), 10, 32)
		if c := a.pages.byID[int32(id)]; err == nil && c != nil {
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
		if c := a.pages.byID[known.CountryID]; c != nil {
			return c, false
		}
	}
	for _, tag := range pagekit.AcceptLanguage(ctx) {
		if c := a.pages.byISO[pagekit.RegionOf(tag)]; c != nil {
			return c, false
		}
	}
	return nil, false
}

// profilePage is GET /supply_api/v4/profile?token=: the hosted profiler of integration path 2
// (a profile token from GET /campaigns). It first asks the country when it cannot tell it.
func (a *API) profilePage(ctx *fasthttp.RequestCtx) {
	token, claims, pub, ok := a.pageToken(ctx, entrytoken.KindProfile)
	if !ok {
		return
	}
	known, _ := a.panel.Get(pub.ID, claims.UserID)
	country, invalid := a.profileCountry(ctx, known)
	if country == nil {
		a.renderCountries(ctx, token, claims, invalid)
		return
	}
	page := a.newProfilePage(token, claims, pub, country)
	if known != nil && known.CountryID == country.id {
		prefill(page.Questions, known)
	}
	pagekit.Render(ctx, a.log, fasthttp.StatusOK, "profile", pagekit.CSP(pagekit.Origin(pub.RedirectURL)), page)
}

func (a *API) renderCountries(ctx *fasthttp.RequestCtx, token string, claims entrytoken.Claims, invalid bool) {
	lang := pagekit.Negotiate(ctx)
	t := pagekit.Lookup(lang)
	page := &countryPage{Base: pagekit.Base{Lang: lang, T: t, Title: t["country_title"], SupportURL: a.supportURL(claims)},
		Action: Prefix + "/profile", Token: token}
	for _, c := range a.pages.countries {
		page.Countries = append(page.Countries, countryChoice{ID: c.id, Name: c.name, Lang: c.lang})
	}
	status := fasthttp.StatusOK
	if invalid {
		status = fasthttp.StatusUnprocessableEntity
		page.Error = t["err_country"]
		page.Errors = []pagekit.FieldError{{Field: "country-" + strconv.Itoa(int(page.Countries[0].ID)), Message: t["err_country"]}}
	}
	pagekit.Render(ctx, a.log, status, "country", "", page)
}

func (a *API) newProfilePage(token string, claims entrytoken.Claims, pub *publisher, c *pageCountry) *profilePage {
	t := pagekit.Lookup(c.lang)
	page := &profilePage{
		Base:   pagekit.Base{Lang: c.lang, T: t, Title: t["profile_title"], SupportURL: a.supportURL(claims)},
		Action: Prefix + "/profile", Token: token, CSRF: pagekit.CSRF(a.key, pagekit.FormProfile, token),
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
func (a *API) profileSubmit(ctx *fasthttp.RequestCtx) {
	token, claims, pub, ok := a.pageToken(ctx, entrytoken.KindProfile)
	if !ok {
		return
	}
	known, _ := a.panel.Get(pub.ID, claims.UserID)
	country, _ := a.profileCountry(ctx, known)
	lang := pagekit.Negotiate(ctx)
	if country != nil {
		lang = country.lang
	}
	if !pagekit.CheckPost(ctx, a.key, pagekit.FormProfile, token, a.cfg.PublicURL) {
		pagekit.FormExpired(ctx, a.log, lang)
		return
	}
	if country == nil {
		a.renderCountries(ctx, token, claims, true)
		return
	}
	cc := a.catalog.byCountry[country.id]
	page := a.newProfilePage(token, claims, pub, country)
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
		pagekit.Render(ctx, a.log, fasthttp.StatusUnprocessableEntity, "profile", pagekit.CSP(pagekit.Origin(pub.RedirectURL)), page)
		return
	}
	user := []byte(claims.UserID)
	if len(user) == 0 {
		pagekit.Forbidden(ctx, a.log)
		return
	}
	if err := a.storeImpanel(pub, user, []byte(claims.DeviceID), cc, answers, nil); err != nil {
		pagekit.Failure(ctx, a.log, lang, err)
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
