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
func deviceType(p *engine.Participant) byte {
	switch p.Device {
	case engine.DeviceDesktop:
		return '2'
	case engine.DeviceTablet:
		return '3'
	}
	return '1'
}

// setOffersRequest fills req with GET /campaigns for participant p.
func (t *Target) setOffersRequest(req *fasthttp.Request, p *engine.Participant, buf []byte) []byte {
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

// EntryURL is one harvested offer: its campaign and the path and query of its
// offer_entry_url.
type EntryURL struct {
	Campaign int64
	URI      string
}

// Harvest is what the harvest step collected from offers answers.
type Harvest struct {
	Entries       []EntryURL
	Requests      int
	Failed        int
	Statuses      map[int]int
	MedianBytes   int
	MeanOffers    float64 // surveys per answer
	EligibleShare float64 // answers with at least one survey
	Took          time.Duration
}

type offersAnswer struct {
	Surveys []struct {
		Identifier    string `json:"identifier"`
		OfferEntryURL string `json:"offer_entry_url"`
	} `json:"surveys"`
}

// HarvestEntries asks for the offers of distinct participants until it holds want entry
// URLs (up to perParticipant of each participant's offers, chosen at random), the panel is
// exhausted or limit has passed, using conns concurrent requests.
func (t *Target) HarvestEntries(c *fasthttp.HostClient, conns, want, perParticipant int, limit time.Duration, seed uint64) *Harvest {
	start := time.Now()
	deadline := start.Add(limit)
	ps := t.Market.Participants
	order := newWorker(0, seed, 0).Rand.Perm(len(ps))
	h := &Harvest{Statuses: map[int]int{}}
	var mu sync.Mutex
	var next atomic.Int64
	var sizes []int
	var offers, eligible int
	var wg sync.WaitGroup
	prefix := t.PublicURL
	for i := range conns {
		wg.Go(func() {
			w := newWorker(i, seed+99, 0)
			defer w.release()
			var buf []byte
			for {
				mu.Lock()
				enough := len(h.Entries) >= want
				mu.Unlock()
				k := int(next.Add(1) - 1)
				if enough || k >= len(order) || time.Now().After(deadline) {
					return
				}
				w.Req.Reset()
				w.Resp.Reset()
				buf = t.setOffersRequest(w.Req, &ps[order[k]], buf)
				err := c.DoTimeout(w.Req, w.Resp, 30*time.Second)
				var a offersAnswer
				ok := err == nil && w.Resp.StatusCode() == fasthttp.StatusOK && json.Unmarshal(w.Resp.Body(), &a) == nil
				var got []EntryURL
				if ok {
					for _, j := range w.Rand.Perm(len(a.Surveys)) {
						s := a.Surveys[j]
						id, err := strconv.ParseInt(s.Identifier, 10, 64)
						if err != nil || !strings.HasPrefix(s.OfferEntryURL, prefix) || len(got) >= perParticipant {
							continue
						}
						got = append(got, EntryURL{Campaign: id, URI: strings.TrimPrefix(s.OfferEntryURL, prefix)})
					}
				}
				mu.Lock()
				h.Requests++
				if err != nil {
					h.Failed++
				} else {
					h.Statuses[w.Resp.StatusCode()]++
				}
				if ok {
					sizes = append(sizes, len(w.Resp.Body()))
					offers += len(a.Surveys)
					if len(a.Surveys) > 0 {
						eligible++
					}
					h.Entries = append(h.Entries, got...)
				} else if err == nil {
					h.Failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n := len(sizes); n > 0 {
		slices.Sort(sizes)
		h.MedianBytes = sizes[n/2]
		h.MeanOffers = float64(offers) / float64(n)
		h.EligibleShare = float64(eligible) / float64(n)
	}
	// Interleave campaigns so that consecutive entries do not queue on one quota row.
	r := newWorker(1, seed+7, 0).Rand
	r.Shuffle(len(h.Entries), func(i, j int) { h.Entries[i], h.Entries[j] = h.Entries[j], h.Entries[i] })
	h.Took = time.Since(start)
	return h
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

// Entries hands out harvested entry URLs, each once while they last, then again from the
// start (a reused token is answered, usually refused by the reentry rule: counted apart).
type Entries struct {
	urls   []EntryURL
	next   atomic.Int64
	reused atomic.Int64
}

// NewEntries hands out urls.
func NewEntries(urls []EntryURL) *Entries { return &Entries{urls: urls} }

func (e *Entries) take() EntryURL {
	i := e.next.Add(1) - 1
	if i >= int64(len(e.urls)) {
		e.reused.Add(1)
	}
	return e.urls[i%int64(len(e.urls))]
}

// Used is how many URLs were handed out, and how many of them for a second time or more.
func (e *Entries) Used() (int64, int64) { return e.next.Load(), e.reused.Load() }

// Operation names of the entry and callback scenarios.
const (
	OpOffers          = "offers"
	OpEntryAdmitted   = "entry: admitted (302 to the survey)"
	OpEntryRefused    = "entry: not eligible (302 to the partner)"
	OpCallback        = "callback"
	opOffers          = 0
	opEntryAdmitted   = 1
	opEntryRefused    = 2
	opCallback        = 3
	entryOpsFirstSlot = opEntryAdmitted
)

var scenarioOps = []string{OpOffers, OpEntryAdmitted, OpEntryRefused, OpCallback}

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
	return opEntryRefused, bytes.HasPrefix(loc, []byte(PublisherReturn))
}

// EntriesScenario follows harvested offer_entry_urls (without following the 302) and keeps
// the admitted sessions in s for callbacks.
func (t *Target) EntriesScenario(name string, e *Entries, s *Sessions) *Scenario {
	return &Scenario{
		Name: name,
		Ops:  scenarioOps,
		Prepare: func(w *Worker) int {
			u := e.take()
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
					c := &t.Market.Campaigns[a.campaign-1]
					buyer := t.Market.Buyers[(c.BuyerID-1)%int64(len(t.Market.Buyers))]
					w.Req.SetRequestURI(CallbackURI(t.PublicURL, buyer, CallbackOutcomes[w.Rand.IntN(len(CallbackOutcomes))], a.tid))
					w.Req.Header.SetHost(t.Addr)
					return opCallback
				}
			case x >= offers:
				u := e.take()
				t.setEntryRequest(w.Req, u)
				w.Tag = u.Campaign
				return entryOpsFirstSlot
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
