package supply

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// postbackStore is the storage of the postback list: a subset of persistence's OutboxStore.
type postbackStore interface {
	ListPostbacks(ctx context.Context, f persistence.PostbackFilter) ([]persistence.PostbackDelivery, error)
}

// postbackListLimit is the default page size of GET /postbacks; 1,000 at most.
const postbackListLimit = 100

// postbackTestTimeout bounds a test postback's work; the sender's own timeout (10 s, every
// redirect included) is shorter.
const postbackTestTimeout = time.Minute

// postbackList is the answer of GET /postbacks.
type postbackList struct {
	Postbacks []persistence.PostbackDelivery `json:"postbacks"`
	// NextBeforeID is the before_id of the next page; 0 when this page is the last.
	NextBeforeID int64 `json:"next_before_id"`
}

// postbacks answers GET /postbacks[?status=pending,retrying,dead][&limit=][&before_id=]:
// the calling publisher's undelivered postbacks in those delivery states (default retrying
// and dead), newest first, with their attempts and last error (docs/supply.md). Delivered postbacks are not listed (see persistence.ListPostbacks).
func (a *API) postbacks(ctx *fasthttp.RequestCtx) {
	pub, err := a.authenticate(ctx)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	args := ctx.QueryArgs()
	f := persistence.PostbackFilter{PublisherID: pub.ID, States: persistence.PostbackFailures, Limit: postbackListLimit}
	if s := args.Peek("status"); len(s) > 0 {
		var ok bool
		if f.States, ok = persistence.ParsePostbackStates(string(s)); !ok {
			a.fail(ctx, fault.BadRequest("status must be one or more of %s, separated by commas",
				strings.Join(persistence.PostbackStates, ", ")))
			return
		}
	}
	if f.Limit, err = httpio.QueryInt(args, "limit", postbackListLimit, 1, 1000); err != nil {
		a.fail(ctx, err)
		return
	}
	before, err := httpio.QueryInt(args, "before_id", 0, 1, 1<<62)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	f.BeforeID = int64(before)
	dbctx, cancel := httpio.DBContext(pageDBTimeout)
	defer cancel()
	list, err := a.deliveries.ListPostbacks(dbctx, f)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	out := postbackList{Postbacks: list}
	if out.Postbacks == nil {
		out.Postbacks = []persistence.PostbackDelivery{}
	}
	if len(list) == f.Limit {
		out.NextBeforeID = list[len(list)-1].ID
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, out)
}

// postbackTestBody is the optional body of POST /postbacks/test.
type postbackTestBody struct {
	UserIdentifier string `json:"user_identifier"`
}

// postbackTest answers POST /postbacks/test: it sends the calling publisher's postback URL a
// signed test postback (status=test) and answers what the partner's server replied
// (payout.SendTest). One test per publisher at a time (429 otherwise); a publisher without
// a postback URL gets 409.
func (a *API) postbackTest(ctx *fasthttp.RequestCtx) {
	pub, err := a.authenticate(ctx)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	var body postbackTestBody
	if err := httpio.DecodeJSON(ctx.PostBody(), &body); err != nil {
		a.fail(ctx, err)
		return
	}
	if body.UserIdentifier == "" {
		body.UserIdentifier = "test-user"
	}
	if len(body.UserIdentifier) > 255 {
		a.fail(ctx, fault.BadRequest("user_identifier must be at most 255 bytes"))
		return
	}
	if a.pbs == nil {
		a.fail(ctx, fault.Unavailable(errors.New("supply: no postback worker")))
		return
	}
	if pub.PostbackURL == "" {
		a.fail(ctx, fault.Conflict("no postback URL is configured for this publisher"))
		return
	}
	sctx, cancel := httpio.DBContext(postbackTestTimeout)
	defer cancel()
	r, err := a.pbs.SendTest(sctx, pub.Publisher, body.UserIdentifier)
	if errors.Is(err, payout.ErrTestInFlight) {
		err = fault.RateLimited()
	}
	if err != nil {
		a.fail(ctx, err)
		return
	}
	httpio.WriteJSON(ctx, fasthttp.StatusOK, r)
}
