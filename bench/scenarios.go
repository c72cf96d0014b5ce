package bench

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/outcome"
)

// Paths of the interfaces under load.
const (
	offersPath = "/supply_api/v4/campaigns"
)

// NewClient is a fasthttp client of addr with up to conns connections.
func NewClient(addr string, conns int) *fasthttp.HostClient {
	return &fasthttp.HostClient{
		Addr:                   addr,
		MaxConns:               conns,
		MaxConnWaitTimeout:     30 * time.Second,
		ReadTimeout:            30 * time.Second,
		WriteTimeout:           30 * time.Second,
		MaxIdleConnDuration:    time.Minute,
		DisablePathNormalizing: true,
		// Entry and callback answers are redirects the bench reads, never follows.
		NoDefaultUserAgentHeader: true,
	}
}

// Target is the server under load and the credentials the bench uses on it.
type Target struct {
	Addr      string // host:port
	PublicURL string // http://host:port, the base of every hash
	Market    *Market
}

// deviceType is the supply device_type of a participant's device.
func deviceType(p *Panelist) byte {
	switch p.Device {
	case engine.DeviceDesktop:
		return '2'
	case engine.DeviceTablet:
		return '3'
	}
	return '1'
}

// setOffersRequest fills req with GET /campaigns for participant p.
func (t *Target) setOffersRequest(req *fasthttp.Request, p *Panelist, buf []byte) []byte {
	buf = append(buf[:0], offersPath...)
	buf = append(buf, "?user_ip=73."...)
	buf = strconv.AppendInt(buf, (p.ID>>16)&255, 10)
	buf = append(buf, '.')
	buf = strconv.AppendInt(buf, (p.ID>>8)&255, 10)
	buf = append(buf, '.')
	buf = strconv.AppendInt(buf, p.ID&255, 10)
	buf = append(buf, "&device_type="...)
	buf = append(buf, deviceType(p))
	req.SetRequestURIBytes(buf)
	req.Header.SetHost(t.Addr)
	req.Header.Set("X-Api-Token", t.Market.Publisher.Token)
	req.Header.Set("X-User-Identifier", UserID(p.ID))
	if p.DeviceID != "" {
		req.Header.Set("X-Device-Identifier", p.DeviceID)
	}
	return buf
}

// OffersScenario asks for the offers of uniformly random participants of the panel.
func (t *Target) OffersScenario(name string) *Scenario {
	ps := t.Market.Participants
	return &Scenario{
		Name: name,
		Ops:  []string{"offers"},
		Prepare: func(w *Worker) int {
			w.Buf = t.setOffersRequest(w.Req, &ps[w.Rand.IntN(len(ps))], w.Buf)
			return 0
		},
		Check: func(w *Worker, op int) (int, bool) { return op, w.Resp.StatusCode() == fasthttp.StatusOK },
	}
}

// OffersDistinctScenario asks for the offers of participants in a random order, each at
// most once in the phase (warm-up included), so that no answer comes from the server's
// answer cache: the cost of matching, ranking and signing every request. A panel smaller
// than the phase's requests wraps around, and the scenario counts those repeats: the
// answer cache keeps an answer from a participant's second miss within its window, so a
// repeat can be a hit when the panel comes round within that window.
func (t *Target) OffersDistinctScenario(name string, seed uint64) *Scenario {
	ps := t.Market.Participants
	order := newWorker(0, seed, 0).Rand.Perm(len(ps))
	var next atomic.Uint64
	return &Scenario{
		Name: name,
		Ops:  []string{"offers"},
		Prepare: func(w *Worker) int {
			i := (next.Add(1) - 1) % uint64(len(order))
			w.Buf = t.setOffersRequest(w.Req, &ps[order[i]], w.Buf)
			return 0
		},
		Check: func(w *Worker, op int) (int, bool) { return op, w.Resp.StatusCode() == fasthttp.StatusOK },
		Repeats: func() uint64 {
			n := next.Load()
			return n - min(n, uint64(len(order)))
		},
	}
}

// EntryURL is one harvested offer: its campaign and the path and query of its
// offer_entry_url.
type EntryURL struct {
	Campaign int64
	URI      string
}

// Harvest is what the harvest step collected from offers answers.
type Harvest struct {
	Entries        []EntryURL
	Requests       int
	Failed         int
	Participants   int // distinct participants the URLs are for
	Campaigns      int // distinct campaigns the URLs are for
	PerParticipant int // the most URLs kept of one participant's answer
	Statuses       map[int]int
	MedianBytes    int
	MeanOffers     float64 // surveys per answer
	EligibleShare  float64 // answers with at least one survey
	Took           time.Duration
}

type offersAnswer struct {
	Surveys []struct {
		Identifier    string `json:"identifier"`
		OfferEntryURL string `json:"offer_entry_url"`
	} `json:"surveys"`
}

// HarvestEntries asks for the offers of distinct participants until it holds want entry
// URLs, the panel is exhausted or limit has passed, using conns concurrent requests. Each
// URL is a fresh offer token: up to perParticipant of a participant's offers, chosen at
// random, never two related campaigns (the second would be refused, docs/rules.md §5), and
// never more URLs of a campaign than its room (Market.Room), so that an entry that follows
// one is admitted unless something the bench cannot see refuses it.
func (t *Target) HarvestEntries(c *fasthttp.HostClient, conns, want, perParticipant int, limit time.Duration, seed uint64) *Harvest {
	start := time.Now()
	hv := &harvester{t: t, c: c, want: want, per: perParticipant, deadline: start.Add(limit),
		order:        newWorker(0, seed, 0).Rand.Perm(len(t.Market.Participants)),
		h:            &Harvest{Statuses: map[int]int{}, PerParticipant: perParticipant},
		taken:        make([]int32, len(t.Market.Campaigns)),
		participants: map[int64]bool{}}
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { hv.run(newWorker(i, seed+99, 0)) })
	}
	wg.Wait()
	h := hv.finish()
	// Interleave campaigns and participants so that consecutive entries do not queue on one
	// quota row nor come from one participant.
	r := newWorker(1, seed+7, 0).Rand
	r.Shuffle(len(h.Entries), func(i, j int) { h.Entries[i], h.Entries[j] = h.Entries[j], h.Entries[i] })
	h.Took = time.Since(start)
	return h
}

// harvester is a harvest of entry URLs in progress, shared by its workers.
type harvester struct {
	t        *Target
	c        *fasthttp.HostClient
	want     int
	per      int // URLs kept of one participant's answer at most
	deadline time.Time
	order    []int        // the panel's indexes, in the order asked
	next     atomic.Int64 // the next of order to ask for

	mu           sync.Mutex
	h            *Harvest
	sizes        []int          // of the answers
	offers       int            // in all answers
	eligible     int            // answers with an offer
	taken        []int32        // URLs handed out per campaign
	participants map[int64]bool // that URLs were kept for
}

// run asks for the offers of the next participant until the harvest has enough, the panel
// is exhausted or the deadline has passed.
func (hv *harvester) run(w *Worker) {
	defer w.release()
	ps := hv.t.Market.Participants
	var buf []byte
	for {
		hv.mu.Lock()
		enough := len(hv.h.Entries) >= hv.want
		hv.mu.Unlock()
		k := int(hv.next.Add(1) - 1)
		if enough || k >= len(hv.order) || time.Now().After(hv.deadline) {
			return
		}
		w.Req.Reset()
		w.Resp.Reset()
		p := &ps[hv.order[k]]
		buf = hv.t.setOffersRequest(w.Req, p, buf)
		err := hv.c.DoTimeout(w.Req, w.Resp, 30*time.Second)
		var a offersAnswer
		ok := err == nil && w.Resp.StatusCode() == fasthttp.StatusOK && json.Unmarshal(w.Resp.Body(), &a) == nil
		hv.mu.Lock()
		hv.h.Requests++
		if err != nil {
			hv.h.Failed++
		} else {
			hv.h.Statuses[w.Resp.StatusCode()]++
		}
		if ok {
			hv.keep(w, p, &a)
		} else if err == nil {
			hv.h.Failed++
		}
		hv.mu.Unlock()
	}
}

// keep counts participant p's answer a and keeps up to per of its entry URLs, chosen at
// random (under mu).
func (hv *harvester) keep(w *Worker, p *Panelist, a *offersAnswer) {
	m, prefix := hv.t.Market, hv.t.PublicURL
	hv.sizes = append(hv.sizes, len(w.Resp.Body()))
	hv.offers += len(a.Surveys)
	if len(a.Surveys) > 0 {
		hv.eligible++
	}
	var got []int64
	for _, j := range w.Rand.Perm(len(a.Surveys)) {
		s := a.Surveys[j]
		id, err := strconv.ParseInt(s.Identifier, 10, 64)
		if err != nil || id < 1 || int(id) > len(hv.taken) || !strings.HasPrefix(s.OfferEntryURL, prefix) ||
			len(got) >= hv.per || hv.taken[id-1] >= m.roomOf(id) || m.relatedTo(id, got) {
			continue
		}
		hv.taken[id-1]++
		got = append(got, id)
		hv.h.Entries = append(hv.h.Entries, EntryURL{Campaign: id, URI: strings.TrimPrefix(s.OfferEntryURL, prefix)})
	}
	if len(got) > 0 {
		hv.participants[p.ID] = true
	}
}

// finish fills the harvest's figures of the answers and of what was kept.
func (hv *harvester) finish() *Harvest {
	h := hv.h
	if n := len(hv.sizes); n > 0 {
		slices.Sort(hv.sizes)
		h.MedianBytes = hv.sizes[n/2]
		h.MeanOffers = float64(hv.offers) / float64(n)
		h.EligibleShare = float64(hv.eligible) / float64(n)
	}
	h.Participants = len(hv.participants)
	for _, n := range hv.taken {
		if n > 0 {
			h.Campaigns++
		}
	}
	return h
}

// roomOf is the room of campaign id (unlimited when the market was not seeded by Seed).
func (m *Market) roomOf(id int64) int32 {
	if m.Room == nil {
		return 1 << 30
	}
	return m.Room[id-1]
}

// relatedTo reports whether campaign id is related to one of the campaigns in got.
func (m *Market) relatedTo(id int64, got []int64) bool {
	for _, r := range m.Campaigns[id-1].Related {
		if slices.Contains(got, r) {
			return true
		}
	}
	return false
}

// Sessions is a bounded queue of admitted transactions waiting for their callback.
type Sessions struct {
	mu   sync.Mutex
	tids []admitted
	max  int
}

type admitted struct {
	tid      string
	campaign int64
}

func (s *Sessions) push(a admitted) {
	s.mu.Lock()
	if len(s.tids) < s.max {
		s.tids = append(s.tids, a)
	}
	s.mu.Unlock()
}

func (s *Sessions) pop() (admitted, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tids) == 0 {
		return admitted{}, false
	}
	a := s.tids[len(s.tids)-1]
	s.tids = s.tids[:len(s.tids)-1]
	return a, true
}

// Len is the number of sessions waiting.
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tids)
}

// split moves half of the sessions into a new set (rounded down), so that a closed-loop
// phase fast enough to answer every admitted session leaves the open-loop phase after it
// some to send.
func (s *Sessions) split() *Sessions {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.tids) / 2
	half := &Sessions{tids: slices.Clone(s.tids[len(s.tids)-n:]), max: s.max}
	s.tids = s.tids[:len(s.tids)-n]
	return half
}

// Entries hands out harvested entry URLs, each once: a URL is never reused (a second
// entry with one token is refused by the reentry rule and would measure refusals). A
// scenario that runs out ends its phase early; the rates are over the time it ran.
type Entries struct {
	urls []EntryURL
	next atomic.Int64
}

// NewEntries hands out urls.
func NewEntries(urls []EntryURL) *Entries { return &Entries{urls: urls} }

func (e *Entries) take() (EntryURL, bool) {
	i := e.next.Add(1) - 1
	if i >= int64(len(e.urls)) {
		return EntryURL{}, false
	}
	return e.urls[i], true
}

// Used is how many URLs were handed out.
func (e *Entries) Used() int64 { return min(e.next.Load(), int64(len(e.urls))) }

// Left is how many URLs are left.
func (e *Entries) Left() int { return len(e.urls) - int(e.Used()) }

// Operation names of the entry and callback scenarios. An entry is admitted when its 302
// goes to the supplier link (SurveyHost); a refusal goes back to the partner's redirect
// URL (PublisherReturn) with status=over_quota, or status=quality_term when the
// participant is blocked for quality.
const (
	OpOffers          = "offers"
	OpEntryAdmitted   = "entry: admitted (302 to the survey)"
	OpEntryRefused    = "entry: refused (302 to the partner, over_quota)"
	OpEntryBlocked    = "entry: refused (302 to the partner, quality_term)"
	OpCallback        = "callback"
	OpCallbackDone    = "callback: complete"
	opOffers          = 0
	opEntryAdmitted   = 1
	opEntryRefused    = 2
	opCallback        = 3
	opEntryBlocked    = 4
	opCallbackDone    = 5
	entryOpsFirstSlot = opEntryAdmitted
)

var scenarioOps = []string{OpOffers, OpEntryAdmitted, OpEntryRefused, OpCallback, OpEntryBlocked, OpCallbackDone}

func (t *Target) setEntryRequest(req *fasthttp.Request, e EntryURL) {
	req.SetRequestURI(e.URI)
	req.Header.SetHost(t.Addr)
}

// checkEntry classifies an entry answer and keeps an admitted session for a callback.
func (t *Target) checkEntry(w *Worker, s *Sessions, campaign int64) (int, bool) {
	if w.Resp.StatusCode() != fasthttp.StatusFound {
		return opEntryRefused, false
	}
	loc := w.Resp.Header.Peek("Location")
	if bytes.HasPrefix(loc, []byte(SurveyHost)) {
		if s != nil {
			if u, err := url.Parse(string(loc)); err == nil {
				if tid := u.Query().Get("tid"); tid != "" {
					s.push(admitted{tid: tid, campaign: campaign})
				}
			}
		}
		return opEntryAdmitted, true
	}
	if bytes.Contains(loc, []byte("status=quality_term")) {
		return opEntryBlocked, bytes.HasPrefix(loc, []byte(PublisherReturn))
	}
	return opEntryRefused, bytes.HasPrefix(loc, []byte(PublisherReturn))
}

// EntriesScenario follows harvested offer_entry_urls (without following the 302), each
// once, and keeps the admitted sessions in s for callbacks; it ends when the URLs run out.
func (t *Target) EntriesScenario(name string, e *Entries, s *Sessions) *Scenario {
	return &Scenario{
		Name: name,
		Ops:  scenarioOps,
		Prepare: func(w *Worker) int {
			u, ok := e.take()
			if !ok {
				return Exhausted
			}
			t.setEntryRequest(w.Req, u)
			w.Tag = u.Campaign
			return entryOpsFirstSlot
		},
		Check: func(w *Worker, op int) (int, bool) { return t.checkEntry(w, s, w.Tag) },
	}
}

// CallbackOutcomes are the outcomes buyers report, in rough marketplace proportions.
var CallbackOutcomes = []string{outcome.Complete, outcome.Complete, outcome.Complete, outcome.Disqualified, outcome.Disqualified, outcome.Disqualified, outcome.OverQuota, outcome.QualityTerm}

// CallbackURI is the path and query of a signed callback (docs/rules.md §7): tr_sech is the hex
// HMAC-SHA1, keyed with the buyer's secret, of the public URL up to "&tr_sech=".
func CallbackURI(publicURL string, buyer Account, outcome, tid string) string {
	uri := "/router/customers/" + buyer.CustomerID + "/cps/" + outcome + "?tid=" + url.QueryEscape(tid)
	mac := hmac.New(sha1.New, []byte(buyer.Secret))
	mac.Write([]byte(publicURL + uri))
	return uri + "&tr_sech=" + hex.EncodeToString(mac.Sum(nil))
}

// MixScenario is the marketplace: offers, entries and callbacks in the proportions
// offers:entries:callbacks. A callback answers a session admitted earlier (by this phase or
// the entries phases); when none is waiting an offers request goes instead.
func (t *Target) MixScenario(name string, offers, entries, callbacks int, e *Entries, s *Sessions) *Scenario {
	ps := t.Market.Participants
	total := offers + entries + callbacks
	return &Scenario{
		Name: name,
		Ops:  scenarioOps,
		Prepare: func(w *Worker) int {
			x := w.Rand.IntN(total)
			switch {
			case x >= offers+entries:
				if a, ok := s.pop(); ok {
					t.setCallbackRequest(w.Req, a, CallbackOutcomes[w.Rand.IntN(len(CallbackOutcomes))])
					return opCallback
				}
			case x >= offers:
				if u, ok := e.take(); ok {
					t.setEntryRequest(w.Req, u)
					w.Tag = u.Campaign
					return entryOpsFirstSlot
				}
				// The URLs ran out: an offers request instead (counted apart from entries).
			}
			w.Buf = t.setOffersRequest(w.Req, &ps[w.Rand.IntN(len(ps))], w.Buf)
			return opOffers
		},
		Check: func(w *Worker, op int) (int, bool) {
			switch op {
			case opCallback:
				return op, w.Resp.StatusCode() == fasthttp.StatusFound
			case opOffers:
				return op, w.Resp.StatusCode() == fasthttp.StatusOK
			}
			return t.checkEntry(w, s, w.Tag)
		},
	}
}

// setCallbackRequest fills req with the signed callback of session a with outcome.
func (t *Target) setCallbackRequest(req *fasthttp.Request, a admitted, outcome string) {
	c := &t.Market.Campaigns[a.campaign-1]
	buyer := t.Market.Buyers[(c.BuyerID-1)%int64(len(t.Market.Buyers))]
	req.SetRequestURI(CallbackURI(t.PublicURL, buyer, outcome, a.tid))
	req.Header.SetHost(t.Addr)
}

// CallbacksScenario reports a complete for each session admitted earlier in the run (the
// costliest outcome: quota and campaign counts, payout, partner notification), each
// once; it ends when no session is left.
func (t *Target) CallbacksScenario(name string, s *Sessions) *Scenario {
	return &Scenario{
		Name: name,
		Ops:  scenarioOps,
		Prepare: func(w *Worker) int {
			a, ok := s.pop()
			if !ok {
				return Exhausted
			}
			t.setCallbackRequest(w.Req, a, outcome.Complete)
			return opCallbackDone
		},
		Check: func(w *Worker, op int) (int, bool) { return op, w.Resp.StatusCode() == fasthttp.StatusFound },
	}
}

// FloorScenario sends the offers requests to the floor server.
func (t *Target) FloorScenario(name string) *Scenario {
	s := t.OffersScenario(name)
	return s
}

// describeStatus renders a status histogram as "200×123, 302×4".
func describeStatus(m map[int]uint64) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", c, m[c]))
	}
	return strings.Join(parts, ", ")
}
