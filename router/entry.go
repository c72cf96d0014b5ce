package router

import (
	"context"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/router/supplierlink"
)

// entry is GET /supply_api/v4/entry?token=: verify the offer token, re-check eligibility
// against live counters, let the database admit the entry (durably, before answering), and
// send the respondent to the supplier link; anyone not admitted goes back to the partner
// with status=over_quota.
func (r *Router) entry(ctx *fasthttp.RequestCtx) {
	now := time.Now()
	claims, err := r.key.Verify(string(ctx.QueryArgs().Peek("token")), now.Unix())
	if err == nil && (claims.Kind != entrytoken.KindOffer || claims.ParticipantID == 0 || claims.CampaignID == 0) {
		err = fault.Forbidden("not an offer token")
	}
	if err != nil {
		httpio.WriteError(ctx, r.log, httpio.StyleError, err)
		return
	}
	// The database gets a context of its own: a RequestCtx's Done channel is replaced by
	// Server.Shutdown and must not reach pgx.
	bg := context.Background()
	pub, err := r.publisher(bg, claims.PublisherID)
	if err != nil {
		if isNotFound(err) {
			err = fault.Forbidden("unknown publisher")
		}
		httpio.WriteError(ctx, r.log, httpio.StyleError, err)
		return
	}
	// Quality hook (router/quality.go): a blocked participant goes back with quality_term.
	if loc := r.qualityRefusal(&claims, pub, now); loc != "" {
		redirect(ctx, loc)
		return
	}
	// Hosted pre-screener hook (router/prescreen.go): a campaign with custom screener
	// questions sends an eligible participant to /router/prescreen first; its post enters.
	if r.prescreenFirst(ctx, &claims, now) {
		return
	}
	location, err := r.enter(bg, &claims, pub, now)
	if err != nil {
		httpio.WriteError(ctx, r.log, httpio.StyleError, err)
		return
	}
	if location == "" {
		location = payout.NotEligibleURL(pub)
	}
	redirect(ctx, location)
}

// enter admits the participant of claims into its campaign and returns the supplier link,
// or "" when the participant may not enter. For a publisher that re-routes screen-outs
// (docs/rules.md §10) the session starts a chain, and a refused entry is re-routed.
func (r *Router) enter(ctx context.Context, claims *entrytoken.Claims, pub persistence.Publisher, now time.Time) (string, error) {
	// Everything below that keeps what it reads of p copies it (the supplier link, the
	// admission's entry): the decoded answers and device id are reused by the next entry.
	stored := r.decodedParticipant()
	defer r.releaseParticipant(stored)
	if err := r.participant(ctx, claims.ParticipantID, stored); err != nil {
		if isNotFound(err) {
			r.verdicts.refused(refusedByRouter, "")
			return "", nil
		}
		return "", err
	}
	p := offerParticipant(stored, claims)
	var buf [16]int64
	quotas, ok := r.eng.Eligible(&p, claims.CampaignID, now.Unix(), buf[:0])
	if !ok {
		return r.engineRefused(ctx, claims, pub, &p, now)
	}
	route, err := r.route(ctx, claims.CampaignID)
	if err != nil {
		if isNotFound(err) {
			r.verdicts.refused(refusedByRouter, "")
			return "", nil
		}
		return "", err
	}
	// Placeholders that need the database are looked up before admission, so that an
	// admitted session is answered without another round trip.
	retarget, err := r.retargetID(ctx, route, &p)
	if err != nil {
		return "", err
	}
	e := offerEntry(claims, pub, p.ID, quotas)
	a, err := r.admit(ctx, e)
	if err != nil {
		return "", err
	}
	if a.Refused != "" {
		return r.databaseRefused(ctx, claims, pub, &p, a, now)
	}
	r.admitted(e, pub, a)
	return supplierlink.Build(route.SupplierLink, supplierlink.Values{TID: a.TID, RespondentID: a.RespondentID,
		RetargetID: retarget, Answers: p.Answers}, route.BuyerSecret), nil
}

// offerParticipant is the stored participant as of the offer of claims: the device is the
// one of this offer, not of the last impanel.
func offerParticipant(stored *engine.Participant, claims *entrytoken.Claims) engine.Participant {
	p := *stored
	p.Device = engine.DeviceFromSupply(int(claims.DeviceType))
	if claims.DeviceID != "" && claims.DeviceID != p.DeviceID {
		p.DeviceID, p.DeviceIDHash = claims.DeviceID, engine.HashDeviceID(claims.DeviceID)
	}
	return p
}

// offerEntry is the entry the offer of claims asks for into quotas: for a publisher that
// re-routes screen-outs, hop 1 of a new chain.
func offerEntry(claims *entrytoken.Claims, pub persistence.Publisher, participantID int64, quotas []int64) persistence.Entry {
	e := persistence.Entry{
		TID:           newTID(),
		CampaignID:    claims.CampaignID,
		PublisherID:   claims.PublisherID,
		ParticipantID: participantID,
		DeviceID:      claims.DeviceID,
		QuotaIDs:      quotas,
		RespondentID:  newRespondentID(),
		OfferNonce:    int64(claims.Nonce),
	}
	if pub.RerouteAttempts > 0 {
		e.Chain = &persistence.ChainLink{Hop: 1, DeviceType: int(claims.DeviceType), DeviceID: claims.DeviceID,
			Tried: []int64{claims.CampaignID}}
	}
	return e
}

// engineRefused answers an entry the engine refused: a second use of the offer's link
// while its session is in progress resumes that session (the engine may refuse because of
// the place it took, its entry); otherwise it is re-routed for a publisher that re-routes,
// unless the participant entered the campaign before.
func (r *Router) engineRefused(ctx context.Context, claims *entrytoken.Claims, pub persistence.Publisher, p *engine.Participant, now time.Time) (string, error) {
	if loc, found, err := r.resumeOffer(ctx, claims, p); err != nil || found {
		return loc, err
	}
	r.verdicts.refused(refusedByEngine, "")
	if pub.RerouteAttempts > 0 && !enteredBefore(p, claims.CampaignID) {
		return r.rerouteRefused(ctx, claims, pub, p, now)
	}
	return "", nil
}

// databaseRefused answers an entry the database refused (a): the engine's mirror was
// behind the database, and is caught up; a campaign that filled meanwhile is re-routed for
// a publisher that re-routes.
func (r *Router) databaseRefused(ctx context.Context, claims *entrytoken.Claims, pub persistence.Publisher, p *engine.Participant,
	a persistence.Admission, now time.Time) (string, error) {
	r.verdicts.refused(refusedByDatabase, a.Refused)
	r.notify.counts(claims.CampaignID)
	if pub.RerouteAttempts > 0 && (a.Refused == persistence.RefusedQuota || a.Refused == persistence.RefusedDaily) {
		return r.rerouteRefused(ctx, claims, pub, p, now)
	}
	return "", nil
}

// admitted is the bookkeeping of an offer's entry e the database admitted (a): a session
// resumed, or a new one (and a new chain).
func (r *Router) admitted(e persistence.Entry, pub persistence.Publisher, a persistence.Admission) {
	if a.Resumed {
		r.verdicts.resumed.Add(1)
		return
	}
	r.entered(e.CampaignID, e.ParticipantID, a)
	if e.Chain != nil {
		r.reroutes.started(pub.ID)
	}
}

// resumeOffer finds the session in progress that the offer of claims admitted, if any, and
// returns its supplier link (docs/rules.md §6: a link followed twice is one entry). It asks
// the database, because the process that admitted the session may have died before telling
// this one's engine; it runs only for entries the engine refused.
func (r *Router) resumeOffer(ctx context.Context, claims *entrytoken.Claims, p *engine.Participant) (string, bool, error) {
	a, found, err := r.sessions.OfferSession(ctx, p.ID, claims.CampaignID, int64(claims.Nonce))
	if err != nil || !found {
		return "", false, err
	}
	route, err := r.route(ctx, claims.CampaignID)
	if err != nil {
		return "", false, err
	}
	r.verdicts.resumed.Add(1)
	loc, err := r.supplierLocation(ctx, route, p, a.TID, a.RespondentID)
	return loc, err == nil, err
}

// newRespondentID is a fresh opaque {RESPONDENT_ID}: 20 random bytes as upper-case hex,
// used when the participant enters a campaign of a buyer for the first time.
func newRespondentID() string { return strings.ToUpper(randomHex(10)) }
