package supply

import (
	"crypto/sha1"
	"encoding/hex"
	"math"
	"net/netip"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/fault"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/internal/identity"
	"github.com/switchboard/switchboard/router/payout"
	"github.com/switchboard/switchboard/supply/partners"
)

// Eligibility reasons of player_eligibility (docs/rules.md §9).
const (
	ReasonEligible      = 0
	ReasonQuality       = 1 // reserved: blocked for quality
	ReasonNoSurveys     = 2
	ReasonCountryClosed = 3
)

// ProfileIdentifier is the identifier of the profile survey an unprofiled participant gets.
const ProfileIdentifier = "profile"

// profileMinutes is the length_in_minutes announced for the profile survey.
const profileMinutes = 3

// reqScratch is the reusable working memory of one GET /campaigns.
type reqScratch struct {
	offers  []engine.Offer
	buf     []byte
	support []byte            // the support URL of this answer, JSON-ready
	signer  entrytoken.Offers // signs this answer's offer tokens (one nonce, one MAC prefix)
	p       engine.Participant
	known   engine.Participant // the panel's participant, decoded by Panel.Lookup (buffers reused)
	upper   [maxIdentifier]byte
	hash    [2 * sha1.Size]byte
}

var scratchPool = sync.Pool{New: func() any { return new(reqScratch) }}

var (
	errNoIP      = fault.BadRequest("user_ip is required")
	errBadIP     = fault.BadRequest("user_ip must be an IP address")
	errNoDevice  = fault.BadRequest("device_type is required")
	errBadDevice = fault.BadRequest("device_type must be 1 (mobile), 2 (desktop) or 3 (tablet)")
)

// offersQuery is what a GET /campaigns names: its publisher, the participant's identifiers,
// address and device type. user and device view the request.
type offersQuery struct {
	pub          *partners.Publisher
	user, device []byte
	addr         netip.Addr
	devType      uint8
}

// parseOffersQuery authenticates a GET /campaigns and reads its identifiers, user_ip (public
// addresses only, supply/quality) and device_type.
func (a *API) parseOffersQuery(ctx *fasthttp.RequestCtx) (q offersQuery, err error) {
	if q.pub, err = a.authenticate(ctx); err != nil {
		return q, err
	}
	if q.user, err = identifierHeader(ctx, "X-User-Identifier", true); err != nil {
		return q, err
	}
	if q.device, err = identifierHeader(ctx, "X-Device-Identifier", false); err != nil {
		return q, err
	}
	args := ctx.QueryArgs()
	ip := args.Peek("user_ip")
	if len(ip) == 0 {
		return q, errNoIP
	}
	if q.addr, err = netip.ParseAddr(identity.View(ip)); err != nil {
		return q, errBadIP
	}
	if err := a.quality.CheckIP(q.addr); err != nil {
		return q, err
	}
	dt := args.Peek("device_type")
	if len(dt) == 0 {
		return q, errNoDevice
	}
	if len(dt) != 1 || dt[0] < '1' || dt[0] > '3' {
		return q, errBadDevice
	}
	q.devType = dt[0] - '0'
	return q, nil
}

// campaigns answers GET /campaigns: the best offers of the participant, from memory.
func (a *API) campaigns(ctx *fasthttp.RequestCtx) {
	q, err := a.parseOffersQuery(ctx)
	if err != nil {
		a.fail(ctx, err)
		return
	}
	pub, user, device, addr, devType := q.pub, q.user, q.device, q.addr, q.devType

	now := a.now()
	pub.Offers.Add(now) // every answer from here on is a 200 (partners.OfferCount)
	sc := scratchPool.Get().(*reqScratch)
	var p *engine.Participant // decoded into the scratch: valid during this request only
	profiled := a.panel.Lookup(pub.ID, identity.View(user), &sc.known)
	if profiled {
		p = &sc.known
	}
	// Blocked for quality, or an IP in another country: from memory, before the cache (supply/quality).
	if body := a.quality.Refusal(pub.ID, user, p, addr, now); body != nil {
		writeRaw(ctx, body)
		scratchPool.Put(sc)
		return
	}
	snap := a.eng.Snapshot().Version() // before matching: a newer snapshot only makes the entry stale
	key := a.cache.key(pub.ID, user, devType, device)
	hit, body, ok := a.cache.get(sc.buf, key, pub.ID, user, devType, device, p, snap, now)
	sc.buf = hit[:0]
	if ok {
		sc.handOver(ctx, body)
		if profiled {
			a.panel.TouchDecoded(p, now)
		}
		scratchPool.Put(sc)
		return
	}

	a.quality.Sight(pub.ID, device, user, now) // the shared-device rule, batched (supply/quality)
	if !profiled {
		sc.buf = a.appendProfileAnswer(sc, pub, user, devType, device, now)
		a.mirror.noteMiss(pub.ID, user)
	} else {
		sc.buf = a.appendOffersAnswer(sc, pub, p, devType, device, now)
		a.panel.TouchDecoded(p, now)
	}
	a.cache.set(key, pub.ID, user, devType, device, p, snap, now, sc.buf)
	sc.handOver(ctx, sc.buf)
	sc.p = engine.Participant{}
	scratchPool.Put(sc)
}

// handOver answers 200 with body, which is sc.buf or its first bytes: the buffer is handed
// to the response, not copied into it, and the response's own buffer comes back as sc.buf
// for the next answer built in this scratch.
func (sc *reqScratch) handOver(ctx *fasthttp.RequestCtx, body []byte) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	ctx.SetContentType(httpio.ContentTypeJSON)
	sc.buf = ctx.Response.SwapBody(body)[:0]
}

// deviceHash returns engine.HashDeviceID(device) computed into sc, without allocating for
// ASCII identifiers.
func (sc *reqScratch) deviceHash(device []byte) string {
	for i, c := range device {
		if c >= utf8.RuneSelf {
			return engine.HashDeviceID(string(device))
		}
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		sc.upper[i] = c
	}
	sum := sha1.Sum(sc.upper[:len(device)])
	hex.Encode(sc.hash[:], sum[:])
	for i, c := range sc.hash {
		if 'a' <= c && c <= 'f' {
			sc.hash[i] = c - ('a' - 'A')
		}
	}
	return identity.View(sc.hash[:])
}

func (a *API) claims(kind uint8, pub *partners.Publisher, participant, campaign int64, devType uint8, device []byte, now int64) entrytoken.Claims {
	return entrytoken.Claims{Kind: kind, PublisherID: pub.ID, ParticipantID: participant, CampaignID: campaign,
		DeviceType: devType, Expires: now + entrytoken.TTL, Nonce: entrytoken.NewNonce(), DeviceID: identity.View(device)}
}

func (a *API) appendOffersAnswer(sc *reqScratch, pub *partners.Publisher, p *engine.Participant, devType uint8, device []byte, now int64) []byte {
	b := append(sc.buf[:0], `{"surveys":[`...)
	if a.catalog.byCountry[p.CountryID] == nil {
		b = append(b, `],"player_eligibility":{"is_eligible":false,"reason":3,"comment":"country not served"}}`...)
		return b
	}
	sc.p = *p
	sc.p.Device = engine.DeviceFromSupply(int(devType))
	sc.p.DeviceID, sc.p.DeviceIDHash = "", ""
	if len(device) > 0 {
		sc.p.DeviceID = identity.View(device)
		if sc.p.DeviceID == p.DeviceID {
			sc.p.DeviceIDHash = p.DeviceIDHash
		} else {
			sc.p.DeviceIDHash = sc.deviceHash(device)
		}
	}
	sc.offers = a.eng.Match(&sc.p, pub.RevenueShare, now, a.cfg.TopK, sc.offers)

	sc.support = append(sc.support[:0], a.urlSupport...)
	sc.support = a.key.AppendToken(sc.support, a.claims(entrytoken.KindSupport, pub, p.ID, 0, devType, device, now))
	sc.support = append(sc.support, '"')
	if len(sc.offers) > 0 {
		a.key.Prepare(&sc.signer, a.claims(entrytoken.KindOffer, pub, p.ID, 0, devType, device, now))
	}
	for i := range sc.offers {
		o := &sc.offers[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"identifier":"`...)
		b = strconv.AppendInt(b, o.CampaignID, 10)
		b = append(b, `","length_in_minutes":`...)
		b = strconv.AppendInt(b, int64(o.LOI), 10)
		b = append(b, `,"conversion_rate":`...)
		b = strconv.AppendInt(b, int64(math.Round(o.Conversion*100)), 10)
		b = append(b, `,"reward_amount":`...)
		// The same rounding the payout of a complete uses, so the offer promises what is paid.
		b = strconv.AppendInt(b, payout.Reward(payout.CompletePayout(o.CPICents, pub.RevenueShare), pub.ExchangeRate), 10)
		b = append(b, `,"epc":`...)
		b = appendEPC(b, o.EPC)
		b = append(b, `,"currency_name":`...)
		b = append(b, pub.Currency...)
		b = append(b, `,"offer_entry_url":`...)
		b = append(b, a.urlEntry...)
		b = sc.signer.AppendToken(b, o.CampaignID)
		b = append(b, `","is_hot_tile":`...)
		b = strconv.AppendBool(b, a.hot.isHot(o.EPC))
		b = append(b, `,"support_url":`...)
		b = append(b, sc.support...)
		b = append(b, '}')
	}
	a.hot.record(sc.offers)
	if len(sc.offers) == 0 {
		return append(b, `],"player_eligibility":{"is_eligible":false,"reason":2,"comment":"no matching surveys"}}`...)
	}
	return append(b, `],"player_eligibility":{"is_eligible":true,"reason":0,"comment":"eligible"}}`...)
}

// appendProfileAnswer is the answer for a participant the panel does not know: the profile
// survey, whose URL opens the hosted profiler (docs/rules.md §9).
func (a *API) appendProfileAnswer(sc *reqScratch, pub *partners.Publisher, user []byte, devType uint8, device []byte, now int64) []byte {
	b := append(sc.buf[:0], `{"surveys":[{"identifier":"profile","length_in_minutes":`...)
	b = strconv.AppendInt(b, profileMinutes, 10)
	b = append(b, `,"conversion_rate":100,"reward_amount":0,"epc":0,"currency_name":`...)
	b = append(b, pub.Currency...)
	b = append(b, `,"offer_entry_url":`...)
	b = append(b, a.urlProfile...)
	c := a.claims(entrytoken.KindProfile, pub, 0, 0, devType, device, now)
	c.UserID = identity.View(user)
	b = a.key.AppendToken(b, c)
	b = append(b, `","is_hot_tile":false,"support_url":`...)
	b = append(b, a.urlSupport...)
	c.Kind, c.Nonce = entrytoken.KindSupport, entrytoken.NewNonce()
	b = a.key.AppendToken(b, c)
	return append(b, `"}],"player_eligibility":{"is_eligible":true,"reason":0,"comment":"profile survey"}}`...)
}

// appendEPC appends an offer's epc rounded to 4 decimals, the shortest way (1.2, not
// 1.2000): what strconv.AppendFloat(b, math.Round(epc*1e4)/1e4, 'f', -1, 64) writes, from
// integers instead of the shortest-float search, which cost 3% of an offers request's CPU.
func appendEPC(b []byte, epc float64) []byte {
	r := math.Round(epc * 1e4)
	if !(math.Abs(r) < 1<<53) { // NaN, infinities and figures no offer has
		return strconv.AppendFloat(b, r/1e4, 'f', -1, 64)
	}
	if math.Signbit(r) { // -0 included, as AppendFloat writes it
		b = append(b, '-')
		r = -r
	}
	n := int64(r)
	b = strconv.AppendInt(b, n/1e4, 10)
	frac := n % 1e4
	if frac == 0 {
		return b
	}
	var digits [4]byte
	for i := 3; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	last := 3
	for digits[last] == '0' {
		last--
	}
	return append(append(b, '.'), digits[:last+1]...)
}
