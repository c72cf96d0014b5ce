package engine

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// The bid-price policy (AllocationBidPrice; docs/allocation.md, "Bid prices").
//
// Off the request path, RefreshAllocation solves, on a sample of the panel,
// the fluid linear programme of the next day of the market: sampled
// participant i brings θ·ρ_i sessions a day (ρ_i its daily participation
// rate, θ the sessions with an outcome an active participant-day brings,
// measured from the counters), spread over the first offers of its list
// (listShares), each of which is an open non-global quota its campaign
// admits it through; a session spent on quota q earns the buyer's payout
// v_q = cpi × conversion and uses `use_q` of the quota's need (the
// conversion, or 1 entry for a click-balanced quota). The programme
// maximises the payout of the day under one covering constraint per quota:
// at least its pace, the remaining need spread evenly over the days left T_q,
// whose shortfall costs the buyer's value of a complete delivered on
// schedule, v_q/T_q (a complete the day falls short can still be delivered
// on one of the T_q days left, so one day's shortfall is worth 1/T_q of its
// payout): dual α_q ∈ [0, 1/T_q]. A quota that falls short of its whole
// need over its field period even at that price cannot be delivered on
// schedule and is rejected (α_q = 0), as Moore–Hodgson rejects the jobs that
// cannot finish by their deadlines, so that it takes nothing from the quotas
// that can. The engine closes a quota when it is full, so the programme
// carries no packing constraint. Its solution ranks every quota by
// v_q·(1 + α_q); the engine ranks an offer by the partner's expected
// revenue, the EPC, × the weight w_q = 1 + α_q of the best open quota the
// participant matches: a quota behind its pace draws participants from
// quotas on schedule, the more the closer its deadline. Each sampled
// participant is counted once across every quota, at its place in each
// list.
//
// One day rather than the whole field period: in a market whose campaigns
// are renewed as they end, a participant's future days are shared with
// campaigns that have not arrived yet, as today's are with today's; the
// programme of the whole remaining period counts them as free and defers
// too much (docs/allocation.md says what that cost in the simulator).

// Bid-price parameters (docs/allocation.md, chosen on the tuning seeds).
const (
	// bidPriceRounds is the number of dual descent rounds one refresh runs,
	// from the previous refresh's weights.
	bidPriceRounds = 40
	// bidPriceStep is the first round's step of a price (relative to the
	// payout); round t's is bidPriceStep / √(t+1).
	bidPriceStep = 0.5
	// bidPriceHorizon is the programme's horizon in days.
	bidPriceHorizon = 1.0
	// deliveryValue is the buyer's value of a complete delivered on
	// schedule, relative to its payout, for a quota with one day left: the
	// largest α of a quota with T days left is deliveryValue / T.
	deliveryValue = 1.0
	// minDaysLeft is the least T the largest α is computed with: a quota
	// weighs at most 1 + deliveryValue/minDaysLeft.
	minDaysLeft = 0.5
	// maxQuotaWeight is the largest weight the programme gives.
	maxQuotaWeight = 1 + deliveryValue/minDaysLeft
	// initialSessionsPerDay is θ until the counters have measured it.
	initialSessionsPerDay = 0.5
	// sessionsMemoryDays is the time constant of θ's moving average.
	sessionsMemoryDays = 1.0
)

// listShares is the share of a participant's sessions that goes to each of
// the first three offers of its list: attention halves with each position.
var listShares = [3]float64{4.0 / 7, 2.0 / 7, 1.0 / 7}

// lpQuota is one open quota of the programme.
type lpQuota struct {
	id    int64
	set   []uint64  // the sampled participants its campaign admits through it
	rates []float64 // the sample's daily rates, by bit
	left  float64   // days of the horizon it is open
	days  float64   // days of its field period left
	value float64   // the buyer's payout a session brings: cpi × conversion
	use   float64   // need a session uses: the conversion, or 1 when click-balanced
	need  float64   // need left
	pace  float64   // need due within the horizon at an even pace
	// alpha is its price (relative to value) for falling behind its pace,
	// at most ceiling; w = 1 + alpha its weight, wsum the sum of w over the
	// averaged rounds. rejected is set once it cannot meet its need by its
	// deadline even at the ceiling.
	alpha, ceiling, w, wsum float64
	rejected                bool
}

// bidPrices is the state the policy carries from one refresh to the next.
type bidPrices struct {
	// sessions is each campaign's sessions with an outcome at the last
	// refresh, at time at; theta the measured sessions per active
	// participant-day.
	sessions map[int64]int64
	at       int64
	theta    float64
}

// sessionsPerDay updates θ from the sessions with an outcome the campaigns
// of s gained since the previous refresh, over the panel's active
// participant-days in between (rateSum a day), and returns it.
func (b *bidPrices) sessionsPerDay(s *Snapshot, now int64, rateSum float64) float64 {
	if b.theta == 0 {
		b.theta = initialSessionsPerDay
	}
	cur := make(map[int64]int64, len(b.sessions))
	gained := int64(0)
	for _, c := range s.parts {
		for _, part := range c.partitions() {
			for slot := range part.camps {
				id := part.cold[slot].id
				n := part.camps[slot].counter.sessions.Load()
				cur[id] = n
				if prev, ok := b.sessions[id]; ok {
					gained += max(n-prev, 0)
				}
			}
		}
	}
	if days := float64(now-b.at) / secondsPerDay; b.sessions != nil && days > 0 && rateSum > 0 {
		a := days / (days + sessionsMemoryDays)
		b.theta = (1-a)*b.theta + a*float64(gained)/(days*rateSum)
	}
	b.sessions, b.at = cur, now
	return b.theta
}

// partitions returns the country's base partition and its delta, if any.
func (c *country) partitions() []*partition {
	if c.delta != nil {
		return []*partition{c.base, c.delta}
	}
	return []*partition{c.base}
}

// priceQuotas computes the weight of every non-global quota of s's
// campaigns (quota id → weight) from the panel sample, the counters and
// the previous weights prev, as of now.
func (s *Snapshot) priceQuotas(panel *Panel, now int64, b *bidPrices, prev map[int64]float64) map[int64]float64 {
	out := make(map[int64]float64)
	byCountry := sampleCountries(s, panel, now)
	rateSum := 0.0
	for _, sm := range byCountry {
		rateSum += sm.rateSum
	}
	theta := b.sessionsPerDay(s, now, rateSum)
	for id, c := range s.parts {
		sm := byCountry[id]
		var qs []*lpQuota
		for _, part := range c.partitions() {
			qs = part.lpQuotas(sm, now, prev, out, qs)
		}
		if len(qs) == 0 {
			continue
		}
		// A sampled participant stands for active/sample of the panel.
		solveBidPrices(qs, len(sm.ps), theta*float64(sm.active)/float64(len(sm.ps)))
		for _, q := range qs {
			out[q.id] = q.w
		}
	}
	return out
}

// lpQuotas appends to qs the open non-global quotas of the partition's
// campaigns, each with the sampled participants its campaign admits through
// it (device, its conditions, no full global quota of the campaign), and
// sets in out the weight of the others: 1 (a full quota takes no offer; a
// campaign of a country without sample, or out of field, ranks by EPC).
func (part *partition) lpQuotas(sm *supplySampler, now int64, prev, out map[int64]float64, qs []*lpQuota) []*lpQuota {
	var scan *supplyScan
	if sm != nil && len(sm.ps) > 0 {
		scan = newSupplyScan(part, sm.ps, sm.rates)
	}
	full := make([]bool, len(part.quotas))
	for q := range part.quotas {
		qm := &part.quotas[q]
		full[q] = qm.counter.full(qm.num, qm.clickBalanced)
	}
	for slot := range part.camps {
		cm, def := &part.camps[slot], part.cold[slot].def
		conv := Conversion(int(cm.inc), cm.counter.sessions.Load(), cm.counter.completes.Load())
		left := float64(max(def.DaysInField, 1))
		if def.FieldStart > 0 {
			left = float64(def.FieldStart+int64(def.DaysInField)*secondsPerDay-now) / secondsPerDay
		}
		var blocked []uint64
		for q := cm.q0; q < cm.g0; q++ {
			qm := &part.quotas[q]
			id := part.qdefs[q].ID
			out[id] = 1
			if scan == nil || full[q] || left <= 0 || cm.cpi <= 0 || conv <= 0 {
				continue
			}
			lq := &lpQuota{id: id, left: min(left, bidPriceHorizon), days: left, value: float64(cm.cpi) / 100 * conv, use: conv, w: 1, rates: sm.rates,
				ceiling: deliveryValue / max(left, minDaysLeft)}
			used := float64(qm.counter.completes.Load()) + conv*float64(max(qm.counter.inProgress.Load(), 0))
			if qm.clickBalanced {
				lq.use, used = 1, float64(qm.counter.entries.Load())
			}
			if lq.need = float64(qm.num) - used; lq.need <= 0 {
				continue
			}
			lq.pace = lq.need * lq.left / left
			lq.set = make([]uint64, scan.words)
			if !scan.quota(lq.set, q) {
				continue
			}
			if blocked == nil {
				blocked = make([]uint64, scan.words)
				tmp := make([]uint64, scan.words)
				for g := cm.g0; g < cm.q1; g++ {
					if full[g] && scan.quota(tmp, g) {
						for w := range blocked {
							blocked[w] |= tmp[w]
						}
					}
				}
			}
			dev := scan.devices(cm.devices)
			for w := range lq.set {
				lq.set[w] &= dev[w] &^ blocked[w]
			}
			if v, ok := prev[id]; ok {
				lq.alpha = min(max(v-1, 0), lq.ceiling)
				lq.w = 1 + lq.alpha
			}
			qs = append(qs, lq)
		}
	}
	return qs
}

// solveBidPrices runs dual descent on the programme of qs over n sampled
// participants, each bringing scale × its rate sessions a day, and leaves
// in each quota's w the average of its weights over the second half of the
// rounds. Each round allocates the participants' sessions at the current
// weights (allocate) and moves each quota's price α by the step × its
// relative shortfall from its pace, within [0, its ceiling]; a quota at its
// ceiling whose day, repeated over its field period left, falls short of
// its need is rejected: its price is 0 from then on.
func solveBidPrices(qs []*lpQuota, n int, scale float64) {
	a := newAllocation(qs, n)
	half := bidPriceRounds / 2
	for t := range bidPriceRounds {
		step := bidPriceStep / math.Sqrt(float64(t+1))
		a.allocate(func(q *lpQuota, days float64) {
			got := days * scale * q.use
			if q.alpha >= q.ceiling && got*q.days/q.left < q.need {
				q.rejected = true
			}
			q.alpha = min(max(q.alpha-step*(got-q.pace)/max(got, q.pace), 0), q.ceiling)
			if q.rejected {
				q.alpha = 0
			}
			q.w = 1 + q.alpha
			if t >= half {
				q.wsum += q.w
			}
		})
	}
	for _, q := range qs {
		q.w = q.wsum / float64(bidPriceRounds-half)
	}
}

// allocation is the working memory of allocating the sample's sessions to
// quotas at given weights.
type allocation struct {
	qs    []*lpQuota
	order []ranked     // quotas by descending net value during a round
	above [][3]float64 // per participant: the three latest closing times of the quotas ranked above
	full  []uint64     // participants whose list is full above for the whole horizon
}

// ranked is a quota's net value and index, the key quotas are walked by.
type ranked struct {
	key float64
	i   int32
}

func newAllocation(qs []*lpQuota, n int) *allocation {
	a := &allocation{qs: qs, order: make([]ranked, len(qs)), above: make([][3]float64, n), full: make([]uint64, (n+63)/64)}
	for i := range a.order {
		a.order[i].i = int32(i)
	}
	return a
}

// allocate walks the quotas by descending net value v·w (ties by id) and
// calls got with each and the participant-days it takes: at each moment of
// the horizon, a participant's list holds the quotas it is admitted to
// still open, best first, and the quota at position k gets listShares[k]
// of its day. A participant with three quotas above open the whole horizon
// gives nothing more and is skipped.
func (a *allocation) allocate(got func(q *lpQuota, days float64)) {
	// The previous round's order, nearly sorted still, is re-sorted.
	for i := range a.order {
		q := a.qs[a.order[i].i]
		a.order[i].key = q.value * q.w
	}
	slices.SortFunc(a.order, func(x, y ranked) int {
		if c := cmp.Compare(y.key, x.key); c != 0 {
			return c
		}
		return cmp.Compare(a.qs[x.i].id, a.qs[y.i].id)
	})
	clear(a.above)
	clear(a.full)
	for _, r := range a.order {
		q := a.qs[r.i]
		days := 0.0
		for w, word := range q.set {
			for m := word &^ a.full[w]; m != 0; m &= m - 1 {
				b := bits.TrailingZeros64(m)
				i := w*64 + b
				d := &a.above[i]
				days += listShare(d, q.left) * q.rates[i]
				if d[2] >= bidPriceHorizon {
					a.full[w] |= 1 << b
				}
			}
		}
		got(q, days)
	}
}

// listShare returns the days of a participant's list that go to a quota
// open for the first left days of the horizon, and adds left to d, the
// three latest closing times of the quotas ranked above it (latest first):
// at each moment the quota's position is 1 + the quotas above still open.
func listShare(d *[3]float64, left float64) float64 {
	got := listShares[0]*max(left-d[0], 0) + listShares[1]*max(min(left, d[0])-d[1], 0) + listShares[2]*max(min(left, d[1])-d[2], 0)
	switch {
	case left > d[0]:
		d[0], d[1], d[2] = left, d[0], d[1]
	case left > d[1]:
		d[1], d[2] = left, d[1]
	case left > d[2]:
		d[2] = left
	}
	return got
}
