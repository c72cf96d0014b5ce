package supply

import (
	"context"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/pagekit"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/supply/partners"
)

// supportStore is the storage of the support page: a subset of persistence's ParticipantStore.
type supportStore interface {
	CreateSupportRequest(ctx context.Context, r persistence.SupportRequest) (int64, error)
	SupportRequestOf(ctx context.Context, id, publisherID int64, nonce uint64) (persistence.SupportRequest, error)
	RecentEntries(ctx context.Context, publisherID, participantID int64, since time.Time, limit int) ([]persistence.RecentEntry, error)
}

const (
	maxSupportMessage = 2000 // characters
	maxSupportEmail   = 254
	supportWindow     = 24 * time.Hour // entries the support page lists
	supportEntries    = 10
	pageDBTimeout     = 5 * time.Second
)

type supportEntry struct {
	CampaignID int64
	Label      string
}

type supportPage struct {
	pagekit.Base
	Action        string
	Token         string
	CSRF          string
	About         string
	Sessions      []supportEntry
	Campaign      int64
	Message       string
	Email         string
	CampaignError string
	MessageError  string
	EmailError    string
}

type supportDonePage struct {
	pagekit.Base
	Body string
}

// supportLang is the language of a support page: the participant's country's first
// language, else the browser's.
func (h *hostedPages) supportLang(ctx *fasthttp.RequestCtx, c entrytoken.Claims, pub *partners.Publisher) string {
	if c.ParticipantID != 0 {
		if p, ok := h.panel.GetByID(c.ParticipantID); ok {
			if pc := h.texts.byID[p.CountryID]; pc != nil {
				return pc.lang
			}
		}
	} else if p, ok := h.panel.Get(pub.ID, c.UserID); ok {
		if pc := h.texts.byID[p.CountryID]; pc != nil {
			return pc.lang
		}
	}
	return pagekit.Negotiate(ctx)
}

func (h *hostedPages) newSupportPage(token string, c entrytoken.Claims, pub *partners.Publisher, lang string) (*supportPage, error) {
	t := pagekit.Lookup(lang)
	page := &supportPage{Base: pagekit.Base{Lang: lang, T: t, Title: t["support_title"]},
		Action: "/support", Token: token, CSRF: pagekit.CSRF(h.key, pagekit.FormSupport, token)}
	if c.ParticipantID == 0 {
		page.About = fmt.Sprintf(t["support_profile"], pub.Name)
		return page, nil
	}
	page.About = fmt.Sprintf(t["support_survey"], pub.Name)
	dbctx, cancel := httpio.DBContext(pageDBTimeout)
	defer cancel()
	entries, err := h.support.RecentEntries(dbctx, pub.ID, c.ParticipantID, time.Unix(h.now(), 0).Add(-supportWindow), supportEntries)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		page.Sessions = append(page.Sessions, supportEntry{CampaignID: e.CampaignID,
			Label: fmt.Sprintf(t["support_entered"], "#"+strconv.FormatInt(e.CampaignID, 10), e.EnteredAt.UTC().Format("2006-01-02 15:04 UTC"))})
		if e.CampaignID == c.CampaignID {
			page.Campaign = c.CampaignID
		}
	}
	return page, nil
}

// supportPageGet is GET /support?token=: the help page of a participant's session (the
// profiler, or the offers of a profiled participant), with a form that records a support
// request for the operator. After a post it shows the confirmation (sent=<id>).
func (h *hostedPages) supportPageGet(ctx *fasthttp.RequestCtx) {
	token, c, pub, ok := h.pageToken(ctx, entrytoken.KindSupport)
	if !ok {
		return
	}
	lang := h.supportLang(ctx, c, pub)
	if sent := ctx.QueryArgs().Peek("sent"); len(sent) > 0 {
		if id, err := strconv.ParseInt(string(sent), 10, 64); err == nil {
			dbctx, cancel := httpio.DBContext(pageDBTimeout)
			_, err := h.support.SupportRequestOf(dbctx, id, pub.ID, c.Nonce)
			cancel()
			if err == nil {
				t := pagekit.Lookup(lang)
				pagekit.Render(ctx, h.log, fasthttp.StatusOK, "support_done", "", &supportDonePage{
					Base: pagekit.Base{Lang: lang, T: t, Title: t["support_done"]},
					Body: fmt.Sprintf(t["support_done_body"], "SR-"+strconv.FormatInt(id, 10))})
				return
			}
		}
	}
	page, err := h.newSupportPage(token, c, pub, lang)
	if err != nil {
		pagekit.Failure(ctx, h.log, lang, err)
		return
	}
	pagekit.Render(ctx, h.log, fasthttp.StatusOK, "support", "", page)
}

// supportSubmit is POST /support: validates and stores the request, then 303 to the
// confirmation.
func (h *hostedPages) supportSubmit(ctx *fasthttp.RequestCtx) {
	token, c, pub, ok := h.pageToken(ctx, entrytoken.KindSupport)
	if !ok {
		return
	}
	lang := h.supportLang(ctx, c, pub)
	if !pagekit.CheckPost(ctx, h.key, pagekit.FormSupport, token, h.publicURL) {
		pagekit.FormExpired(ctx, h.log, lang)
		return
	}
	page, err := h.newSupportPage(token, c, pub, lang)
	if err != nil {
		pagekit.Failure(ctx, h.log, lang, err)
		return
	}
	t := page.T
	args := ctx.PostArgs()
	page.Message = string(args.Peek("message"))
	page.Email = strings.TrimSpace(string(args.Peek("email")))
	msg := strings.TrimSpace(page.Message)
	if msg == "" || !httpio.ValidText(msg) || utf8.RuneCountInString(msg) > maxSupportMessage {
		page.MessageError = t["err_message"]
	}
	if page.Email != "" {
		addr, err := mail.ParseAddress(page.Email)
		if err != nil || !httpio.ValidText(page.Email) || addr.Address != page.Email || len(page.Email) > maxSupportEmail || !strings.Contains(page.Email, ".") {
			page.EmailError = t["err_email"]
		}
	}
	page.Campaign = 0
	if raw := string(args.Peek("campaign")); raw != "" && raw != "0" {
		id, err := strconv.ParseInt(raw, 10, 64)
		found := false
		for _, s := range page.Sessions {
			found = found || (err == nil && s.CampaignID == id)
		}
		if found {
			page.Campaign = id
		} else {
			page.CampaignError = t["err_campaign"]
		}
	}
	if page.CampaignError != "" {
		page.Errors = append(page.Errors, pagekit.FieldError{Field: "campaign-0", Message: t["support_campaign"] + " — " + page.CampaignError})
	}
	if page.MessageError != "" {
		page.Errors = append(page.Errors, pagekit.FieldError{Field: "message", Message: t["support_message"] + " — " + page.MessageError})
	}
	if page.EmailError != "" {
		page.Errors = append(page.Errors, pagekit.FieldError{Field: "email", Message: t["support_email"] + " — " + page.EmailError})
	}
	if len(page.Errors) > 0 {
		pagekit.Render(ctx, h.log, fasthttp.StatusUnprocessableEntity, "support", "", page)
		return
	}
	req := persistence.SupportRequest{PublisherID: pub.ID, ParticipantID: c.ParticipantID, User: c.UserID,
		CampaignID: page.Campaign, Kind: persistence.SupportSurvey, Message: msg, ContactEmail: page.Email, TokenNonce: c.Nonce}
	if c.ParticipantID == 0 {
		req.Kind = persistence.SupportProfile
	}
	dbctx, cancel := httpio.DBContext(pageDBTimeout)
	defer cancel()
	id, err := h.support.CreateSupportRequest(dbctx, req)
	if err != nil {
		pagekit.Failure(ctx, h.log, lang, err)
		return
	}
	pagekit.SeeOther(ctx, "/support?token="+token+"&sent="+strconv.FormatInt(id, 10))
}
