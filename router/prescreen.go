package router

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// The hosted pre-screener (docs/rules.md §5): a campaign with custom screener questions attached
// (campaign_qualifications) asks them on a page before the entry. The entry sends an
// eligible participant there instead of admitting them; the page's post decides:
//
//   - every question answered with one of its qualifying pre_codes: the entry goes on
//     through r.enter (admission, durable session, supplier link) and the answers are
//     attached to the new session (screener_answers, read as tq_<question_id>);
//   - otherwise: 303 back to the partner, status=disqualified, reward=0, signed.
//
// Every sheet is kept in prescreen_responses, qualified or not.

// PrescreenPath is the pre-screener page; it takes the offer token of the entry.
const PrescreenPath = "/router/prescreen"

const prescreenDBTimeout = 5 * time.Second

// prescreenSheets stores the sheets of the pre-screener.
type prescreenSheets interface {
	RecordPrescreen(ctx context.Context, r persistence.PrescreenResponse) (int64, error)
}

// prescreenAttacher attaches a qualified sheet to the session its entry admitted.
type prescreenAttacher interface {
	AttachPrescreen(ctx context.Context, responseID, participantID, campaignID int64) (int64, error)
}

// prescreener serves the hosted pre-screener's page and its post, which enters through
// entry.
type prescreener struct {
	entry     *Router
	sheets    prescreenSheets
	attach    prescreenAttacher
	key       *entrytoken.Key
	log       *zap.Logger
	publicURL string
}

// prescreenFirst is the entry's hook: for a campaign with screener questions it sends a
// participant who may enter to the pre-screener and reports true. A participant who may
// not enter goes on through the entry, which refuses them as usual. On a failure it answers
// the error and reports true.
func (r *Router) prescreenFirst(ctx *fasthttp.RequestCtx, claims *entrytoken.Claims, now time.Time) bool {
	scr, err := r.screener(context.Background(), claims.CampaignID)
	if err != nil {
		httpio.WriteError(ctx, r.log, httpio.StyleError, err)
		return true
	}
	if scr == nil {
		return false
	}
	ok, err := r.mayEnter(context.Background(), claims, now)
	if err != nil {
		httpio.WriteError(ctx, r.log, httpio.StyleError, err)
		return true
	}
	if !ok {
		return false
	}
	redirect(ctx, r.cfg.PublicURL+PrescreenPath+"?token="+url.QueryEscape(string(ctx.QueryArgs().Peek("token"))))
	return true
}

// mayEnter is the engine's eligibility check of the entry (live counters, no admission).
func (r *Router) mayEnter(ctx context.Context, claims *entrytoken.Claims, now time.Time) (bool, error) {
	stored := r.decodedParticipant()
	defer r.releaseParticipant(stored)
	if err := r.participant(ctx, claims.ParticipantID, stored); err != nil {
		if isNotFound(err) {
			return false, nil
		}
		return false, err
	}
	p := offerParticipant(stored, claims)
	var buf [16]int64
	_, ok := r.eng.Eligible(&p, claims.CampaignID, now.Unix(), buf[:0])
	return ok, nil
}

// token verifies the offer token of a pre-screener request and finds its
// publisher; on failure it answers the 403 page.
func (p *prescreener) token(ctx *fasthttp.RequestCtx) (string, entrytoken.Claims, persistence.Publisher, bool) {
	token := pagekit.FormToken(ctx)
	claims, err := p.key.Verify(token, time.Now().Unix())
	if err != nil || claims.Kind != entrytoken.KindOffer || claims.ParticipantID == 0 || claims.CampaignID == 0 {
		pagekit.Forbidden(ctx, p.log)
		return "", claims, persistence.Publisher{}, false
	}
	pub, err := p.entry.publisher(context.Background(), claims.PublisherID)
	if err != nil {
		if !isNotFound(err) {
			pagekit.Failure(ctx, p.log, pagekit.Negotiate(ctx), err)
			return "", claims, pub, false
		}
		pagekit.Forbidden(ctx, p.log)
		return "", claims, pub, false
	}
	return token, claims, pub, true
}

type prescreenPage struct {
	pagekit.Base
	Action    string
	Token     string
	CSRF      string
	Questions []pagekit.Question
}

func (p *prescreener) newPage(token string, claims entrytoken.Claims, scr *persistence.Screener) *prescreenPage {
	t := pagekit.Lookup(scr.Lang)
	sc := claims
	sc.Kind, sc.Nonce, sc.Expires = entrytoken.KindSupport, entrytoken.NewNonce(), time.Now().Unix()+entrytoken.TTL
	page := &prescreenPage{
		Base: pagekit.Base{Lang: scr.Lang, T: t, Title: t["prescreen_title"],
			SupportURL: p.publicURL + "/support?token=" + p.key.Sign(sc)},
		Action: PrescreenPath, Token: token, CSRF: pagekit.CSRF(p.key, pagekit.FormPrescreen, token),
	}
	for _, sq := range scr.Questions {
		q := pagekit.Question{T: t, ID: int64(sq.QuestionID), Text: sq.Text, Kind: pagekit.KindSingle, Required: true}
		if sq.AnswerType == 1 {
			q.Kind = pagekit.KindMulti
		}
		for _, a := range sq.Answers {
			q.AddOption(a.PreCode, a.OptionText)
		}
		page.Questions = append(page.Questions, q)
	}
	return page
}

// csp lets the page's form lead to the supplier link and back to the partner.
func (p *prescreener) csp(ctx context.Context, campaignID int64, pub persistence.Publisher) string {
	origins := []string{pagekit.Origin(pub.RedirectURL)}
	if route, err := p.entry.route(ctx, campaignID); err == nil {
		origins = append(origins, pagekit.Origin(route.SupplierLink))
	}
	return pagekit.CSP(origins...)
}

// page is GET /router/prescreen?token=: the campaign's screener questions. A
// campaign without any (detached meanwhile) goes back to the entry.
func (p *prescreener) page(ctx *fasthttp.RequestCtx) {
	token, claims, pub, ok := p.token(ctx)
	if !ok {
		return
	}
	scr, err := p.entry.screener(context.Background(), claims.CampaignID)
	if err != nil {
		pagekit.Failure(ctx, p.log, pagekit.Negotiate(ctx), err)
		return
	}
	if scr == nil {
		redirect(ctx, p.publicURL+"/supply_api/v4/entry?token="+url.QueryEscape(token))
		return
	}
	page := p.newPage(token, claims, scr)
	pagekit.Render(ctx, p.log, fasthttp.StatusOK, "prescreen", p.csp(context.Background(), claims.CampaignID, pub), page)
}

// submit is POST /router/prescreen: validates the answers (422 with the page and
// its errors), stores the sheet, and sends the participant on: into the survey when the
// answers qualify and the entry admits them, else back to the partner.
func (p *prescreener) submit(ctx *fasthttp.RequestCtx) {
	token, claims, pub, ok := p.token(ctx)
	if !ok {
		return
	}
	scr, err := p.entry.screener(context.Background(), claims.CampaignID)
	if err != nil {
		pagekit.Failure(ctx, p.log, pagekit.Negotiate(ctx), err)
		return
	}
	lang := pagekit.Negotiate(ctx)
	if scr != nil {
		lang = scr.Lang
	}
	if !pagekit.CheckPost(ctx, p.key, pagekit.FormPrescreen, token, p.publicURL) {
		pagekit.FormExpired(ctx, p.log, lang)
		return
	}
	dbctx, cancel := httpio.DBContext(prescreenDBTimeout)
	defer cancel()
	var respID int64
	if scr != nil {
		page := p.newPage(token, claims, scr)
		answers, qualified := readScreener(ctx, page, scr)
		if page.Errors = pagekit.Summary(page.Questions); len(page.Errors) > 0 {
			pagekit.Render(ctx, p.log, fasthttp.StatusUnprocessableEntity, "prescreen", p.csp(context.Background(), claims.CampaignID, pub), page)
			return
		}
		respID, err = p.sheets.RecordPrescreen(dbctx, persistence.PrescreenResponse{TokenNonce: claims.Nonce,
			PublisherID: claims.PublisherID, ParticipantID: claims.ParticipantID, CampaignID: claims.CampaignID,
			Answers: answers, Qualified: qualified})
		if err != nil {
			pagekit.Failure(ctx, p.log, lang, err)
			return
		}
		if !qualified {
			pagekit.SeeOther(ctx, payout.RedirectURL(pub, payout.Fields{Status: outcome.Disqualified}))
			return
		}
	}
	// A block decided while the page was open still holds (router/quality.go).
	if loc := p.entry.qualityRefusal(&claims, pub, time.Now()); loc != "" {
		pagekit.SeeOther(ctx, loc)
		return
	}
	location, err := p.entry.enter(context.Background(), &claims, pub, time.Now())
	if err != nil {
		pagekit.Failure(ctx, p.log, lang, err)
		return
	}
	if location == "" {
		pagekit.SeeOther(ctx, payout.NotEligibleURL(pub))
		return
	}
	if respID != 0 {
		if sid, err := p.attach.AttachPrescreen(dbctx, respID, claims.ParticipantID, claims.CampaignID); err != nil || sid == 0 {
			// The participant is admitted: send them on; the sheet stays unattached.
			p.log.Error("pre-screener answers not attached to the session", zap.Int64("response", respID),
				zap.Int64("campaign", claims.CampaignID), zap.Error(err))
		}
	}
	pagekit.SeeOther(ctx, location)
}

// readScreener fills page's questions from the post and checks them: every question needs
// an answer among its options (exactly one for single select). qualified reports that every
// answer holds one of the question's qualifying pre_codes.
func readScreener(ctx *fasthttp.RequestCtx, page *prescreenPage, scr *persistence.Screener) ([]persistence.ScreenerAnswer, bool) {
	t := page.T
	qualified := true
	answers := make([]persistence.ScreenerAnswer, 0, len(scr.Questions))
	for i, sq := range scr.Questions {
		q := &page.Questions[i]
		vals := pagekit.PostValues(ctx, q.Name())
		q.Fill(vals)
		if len(vals) == 0 {
			q.Error = t["err_required"]
			continue
		}
		if !q.Multi() && len(vals) > 1 {
			q.Error = t["err_choice"]
			continue
		}
		codes := make([]int32, 0, len(vals))
		for _, v := range vals {
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || !slices.ContainsFunc(sq.Answers, func(a persistence.CatalogAnswer) bool { return a.PreCode == int32(n) }) {
				q.Error = t["err_choice"]
				break
			}
			if !slices.Contains(codes, int32(n)) {
				codes = append(codes, int32(n))
			}
		}
		if q.Error != "" {
			continue
		}
		slices.Sort(codes)
		answers = append(answers, persistence.ScreenerAnswer{QuestionID: sq.QuestionID, PreCodes: codes})
		if !slices.ContainsFunc(codes, func(c int32) bool { return slices.Contains(sq.Qualifying, c) }) {
			qualified = false
		}
	}
	return answers, qualified
}
