package router

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/supplierlink"
)

// routeStore reads a campaign's route: its supplier link and its buyer's secret.
type routeStore interface {
	CampaignRoute(ctx context.Context, id int64) (persistence.CampaignRoute, error)
}

// testSessionStore starts test sessions.
type testSessionStore interface {
	StartTestSession(ctx context.Context, tid string, campaignID int64) (time.Time, error)
}

// testSessions serves a campaign's redirect_test_url: a test session sent to its supplier
// link like a real respondent, whose callback answers a page instead of a partner redirect.
type testSessions struct {
	routes   routeStore
	sessions testSessionStore
	log      *zap.Logger
}

// RedirectTestURL is the stable redirect_test_url of a campaign: each visit starts a test
// session. The signature (keyed with the buyer's api_secret) keeps others from starting
// test sessions on campaigns they do not own.
func RedirectTestURL(publicURL string, campaignID int64, buyerSecret string) string {
	id := strconv.FormatInt(campaignID, 10)
	return strings.TrimRight(publicURL, "/") + "/router/test/" + id + "?sig=" + redirectTestSig(id, buyerSecret)
}

func redirectTestSig(campaignID, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("redirect_test:" + campaignID))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// redirectTest is GET /router/redirect_test/{campaign_id}?sig=: a test session on the
// campaign, in any status, sent to its supplier link like a real respondent.
func (t *testSessions) redirectTest(ctx *fasthttp.RequestCtx) {
	idText, _ := ctx.UserValue("campaign_id").(string)
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		httpio.WriteError(ctx, t.log, httpio.StyleMessage, fault.NotFound("not found"))
		return
	}
	// Not ctx: a RequestCtx's Done channel is replaced by Server.Shutdown and must not
	// reach pgx (see entry).
	bg := context.Background()
	route, err := t.routes.CampaignRoute(bg, id)
	if err != nil {
		httpio.WriteError(ctx, t.log, httpio.StyleMessage, err)
		return
	}
	want := redirectTestSig(idText, route.BuyerSecret)
	if !hmac.Equal([]byte(want), ctx.QueryArgs().Peek("sig")) {
		httpio.WriteError(ctx, t.log, httpio.StyleMessage, fault.Forbidden("invalid signature"))
		return
	}
	tid := newTID()
	if _, err := t.sessions.StartTestSession(bg, tid, id); err != nil {
		httpio.WriteError(ctx, t.log, httpio.StyleMessage, err)
		return
	}
	t.log.Debug("test session started", zap.Int64("campaign", id))
	redirect(ctx, supplierlink.Build(route.SupplierLink, supplierlink.Values{TID: tid, RespondentID: "TEST" + tid[:12]}, route.BuyerSecret))
}
