package engine

import (
	"math"
	"sync"
	"sync/atomic"
)

// secondsPerDay converts unix seconds into UTC day numbers.
const secondsPerDay = 86400

// utcDay is the UTC day number of a unix time.
func utcDay(unix int64) int64 {
	d := unix / secondsPerDay
	if unix < 0 && unix%secondsPerDay != 0 {
		d--
	}
	return d
}

// Daily completes are packed into one atomic word: the UTC day in the high
// bits, that day's count in the low dailyBits bits, so a new day resets the
// count with a single compare-and-swap.
const (
	dailyBits = 40
	dailyMask = 1<<dailyBits - 1
)

// quotaCounter holds the live counts of one quota.
type quotaCounter struct {
	completes  atomic.Int64
	inProgress atomic.Int64
	entries    atomic.Int64
}

// campaignCounter holds the live counts of one campaign.
type campaignCounter struct {
	daily     atomic.Uint64 // day<<dailyBits | completes that UTC day
	sessions  atomic.Int64  // sessions that reached an outcome
	completes atomic.Int64  // sessions that completed
	// hiA and hiB (float64 bits) bound the two terms of the conversion
	// estimate, a = completes/(sessions+m) and b = m/(sessions+m), so that
	// Conversion ≤ hiA + hiB·incidence/100 whatever the campaign's incidence
	// (see convBound). Writers raise them when a term passes its bound and
	// log the raise (Counters.logRaise); only tighten lowers them.
	hiA, hiB atomic.Uint64
	id       int64
}

// QuotaCounts is a read (or an absolute value to set) of a quota's counters.
type QuotaCounts struct {
	Completes  int64 // accepted completes
	InProgress int64 // sessions entered with no outcome yet
	Entries    int64 // all entries (what a click-balanced quota counts)
}

// Full reports whether a quota with this target is closed (docs/rules.md §5): a
// click-balanced quota when its entries reach num; any other when completes
// plus sessions still in progress reach num, so that it never over-delivers.
func (v QuotaCounts) Full(num int, clickBalanced bool) bool {
	if clickBalanced {
		return v.Entries >= int64(num)
	}
	return v.Completes+max(v.InProgress, 0) >= int64(num)
}

// CampaignCounts is a read (or an absolute value to set) of a campaign's
// counters.
type CampaignCounts struct {
	Day          int64 // UTC day number (unix seconds / 86400) DayCompletes belongs to
	DayCompletes int64 // completes on Day
	Sessions     int64 // sessions that reached an outcome, for conversion learning
	Completes    int64 // completes among them
}

// Counters holds every live count, keyed by quota and campaign id. Each id
// gets a counter that never moves, and snapshots keep direct pointers to
// them, so matching reads counts with plain atomic loads. Counters are
// incremented by local events and can be set to absolute values when another
// process reconciles them from the database.
type Counters struct {
	mu        sync.RWMutex
	quotas    map[int64]*quotaCounter
	campaigns map[int64]*campaignCounter
	// New counters are cut from slabs so that counters created together
	// (the quotas of one campaign, the campaigns of one load) sit together
	// in memory: matching reads them in that order.
	quotaSlab    []quotaCounter
	campaignSlab []campaignCounter

	// raises numbers the raises of conversion bounds; raiseLog keeps the
	// campaign id of the latest ones (entry seq&raiseMask). A snapshot's
	// ranking order is valid for every campaign not raised since the order
	// was computed.
	raises   atomic.Uint64
	raiseLog [raiseLogSize]raiseEntry
}

// raiseLogSize is the number of bound raises the log remembers.
const (
	raiseLogSize = 4096
	raiseMask    = raiseLogSize - 1
)

type raiseEntry struct {
	seq atomic.Uint64 // 0 while being written
	id  atomic.Int64
}

// Conversion bound margins: a raised bound leaves this much head room, so
// that a conversion drifting up by a few completes does not raise it again.
const (
	boundMarginA = 0.01
	boundMarginB = 1e-6
	// tightenSlack: a bound this far above its term is lowered by tighten.
	tightenSlack = 0.02
)

// slabSize is the number of counters allocated at once.
const slabSize = 256

// NewCounters returns an empty set of counters.
func NewCounters() *Counters {
	return &Counters{
		quotas:    make(map[int64]*quotaCounter),
		campaigns: make(map[int64]*campaignCounter),
	}
}

func (c *Counters) quota(id int64) *quotaCounter {
	c.mu.RLock()
	q := c.quotas[id]
	c.mu.RUnlock()
	if q != nil {
		return q
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q = c.quotas[id]
	if q == nil {
		if len(c.quotaSlab) == 0 {
			c.quotaSlab = make([]quotaCounter, slabSize)
		}
		q, c.quotaSlab = &c.quotaSlab[0], c.quotaSlab[1:]
		c.quotas[id] = q
	}
	return q
}

func (c *Counters) campaign(id int64) *campaignCounter {
	c.mu.RLock()
	k := c.campaigns[id]
	c.mu.RUnlock()
	if k != nil {
		return k
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k = c.campaigns[id]
	if k == nil {
		k = c.newCampaignLocked(id)
	}
	return k
}

// newCampaignLocked creates the counter of campaign id; c.mu is held.
func (c *Counters) newCampaignLocked(id int64) *campaignCounter {
	if len(c.campaignSlab) == 0 {
		c.campaignSlab = make([]campaignCounter, slabSize)
	}
	k := &c.campaignSlab[0]
	c.campaignSlab = c.campaignSlab[1:]
	k.id = id
	k.hiB.Store(math.Float64bits(1)) // b ≤ 1 always; a = 0 without completes
	c.campaigns[id] = k
	return k
}

// campaignsOf returns the counter of every campaign of defs, in order,
// taking the lock once.
func (c *Counters) campaignsOf(defs []*Campaign) []*campaignCounter {
	out := make([]*campaignCounter, len(defs))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, d := range defs {
		k := c.campaigns[d.ID]
		if k == nil {
			k = c.newCampaignLocked(d.ID)
		}
		out[i] = k
	}
	return out
}

// quotasOf returns the counters of the quotas of every campaign of defs,
// taking the lock once.
func (c *Counters) quotasOf(defs []*Campaign) [][]*quotaCounter {
	n := 0
	for _, d := range defs {
		n += len(d.Quotas)
	}
	flat := make([]*quotaCounter, 0, n)
	out := make([][]*quotaCounter, len(defs))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, d := range defs {
		start := len(flat)
		for j := range d.Quotas {
			id := d.Quotas[j].ID
			q := c.quotas[id]
			if q == nil {
				if len(c.quotaSlab) == 0 {
					c.quotaSlab = make([]quotaCounter, slabSize)
				}
				q, c.quotaSlab = &c.quotaSlab[0], c.quotaSlab[1:]
				c.quotas[id] = q
			}
			flat = append(flat, q)
		}
		out[i] = flat[start:len(flat):len(flat)]
	}
	return out
}

// RecordEntry counts a respondent entering a campaign with the quotas that
// matched at entry: one more entry and one more session in progress each.
func (c *Counters) RecordEntry(campaignID int64, quotaIDs []int64) {
	for _, id := range quotaIDs {
		q := c.quota(id)
		q.entries.Add(1)
		q.inProgress.Add(1)
	}
}

// RecordOutcome counts the first outcome of a session entered with quotaIDs:
// the session leaves "in progress", the campaign learns one more outcome, and
// a complete counts toward every quota and toward the campaign's completes of
// the UTC day of at.
func (c *Counters) RecordOutcome(campaignID int64, quotaIDs []int64, complete bool, at int64) {
	for _, id := range quotaIDs {
		q := c.quota(id)
		q.inProgress.Add(-1)
		if complete {
			q.completes.Add(1)
		}
	}
	k := c.campaign(campaignID)
	k.sessions.Add(1)
	if complete {
		k.completes.Add(1)
		k.addDaily(utcDay(at), 1)
	}
	k.observe(c)
}

// ReleaseSession ends a session that will get no outcome (it timed out): it
// no longer holds a place in its quotas.
func (c *Counters) ReleaseSession(quotaIDs []int64) {
	for _, id := range quotaIDs {
		c.quota(id).inProgress.Add(-1)
	}
}

// AddCompletes moves the complete counts of a campaign and its quotas by
// delta (negative for a rejected complete, positive for one accepted on
// reconcile), the daily count on the UTC day of at included.
func (c *Counters) AddCompletes(campaignID int64, quotaIDs []int64, delta int64, at int64) {
	for _, id := range quotaIDs {
		c.quota(id).completes.Add(delta)
	}
	k := c.campaign(campaignID)
	k.completes.Add(delta)
	k.addDaily(utcDay(at), delta)
	k.observe(c)
}

// Quota reads the counts of a quota.
func (c *Counters) Quota(id int64) QuotaCounts {
	return c.quota(id).read()
}

// SetQuota sets the counts of a quota to absolute values (reconciliation).
func (c *Counters) SetQuota(id int64, v QuotaCounts) {
	q := c.quota(id)
	q.completes.Store(v.Completes)
	q.inProgress.Store(v.InProgress)
	q.entries.Store(v.Entries)
}

// Campaign reads the counts of a campaign; DayCompletes is the count of the
// UTC day of now (0 when the stored count belongs to another day).
func (c *Counters) Campaign(id int64, now int64) CampaignCounts {
	k := c.campaign(id)
	day := utcDay(now)
	return CampaignCounts{
		Day:          day,
		DayCompletes: k.dailyOn(day),
		Sessions:     k.sessions.Load(),
		Completes:    k.completes.Load(),
	}
}

// SetCampaign sets the counts of a campaign to absolute values
// (reconciliation). DayCompletes counts for the UTC day v.Day.
func (c *Counters) SetCampaign(id int64, v CampaignCounts) {
	k := c.campaign(id)
	k.daily.Store(uint64(v.Day)<<dailyBits | uint64(max(v.DayCompletes, 0))&dailyMask)
	k.sessions.Store(v.Sessions)
	k.completes.Store(v.Completes)
	k.observe(c)
}

func (q *quotaCounter) read() QuotaCounts {
	return QuotaCounts{Completes: q.completes.Load(), InProgress: q.inProgress.Load(), Entries: q.entries.Load()}
}

// full is QuotaCounts.Full on the live atomics without building the struct.
func (q *quotaCounter) full(num int64, clickBalanced bool) bool {
	if clickBalanced {
		return q.entries.Load() >= num
	}
	return q.completes.Load()+max(q.inProgress.Load(), 0) >= num
}

func (k *campaignCounter) dailyOn(day int64) int64 {
	v := k.daily.Load()
	if int64(v>>dailyBits) != day {
		return 0
	}
	return int64(v & dailyMask)
}

func (k *campaignCounter) addDaily(day, delta int64) {
	for {
		old := k.daily.Load()
		n := int64(0)
		if int64(old>>dailyBits) == day {
			n = int64(old & dailyMask)
		} else if int64(old>>dailyBits) > day {
			return // a late event of an earlier day: today's count is unaffected
		}
		n = max(n+delta, 0)
		if k.daily.CompareAndSwap(old, uint64(day)<<dailyBits|uint64(n)&dailyMask) {
			return
		}
	}
}

// convTerms returns the two terms of the conversion estimate of the current
// counts: Conversion = clamp(a + b·incidence/100).
func (k *campaignCounter) convTerms() (a, b float64) {
	d := float64(max(k.sessions.Load(), 0)) + ConversionPriorWeight
	return float64(k.completes.Load()) / d, ConversionPriorWeight / d
}

// observe raises the conversion bounds the current counts exceed and logs
// the raise. Every writer of sessions or completes calls it after writing,
// so once writers stop the bounds hold for the final counts.
func (k *campaignCounter) observe(c *Counters) {
	a, b := k.convTerms()
	ra := raiseBound(&k.hiA, a, a+boundMarginA)
	rb := raiseBound(&k.hiB, b, min(b+boundMarginB, 1))
	if ra || rb {
		c.logRaise(k.id)
	}
}

func raiseBound(cell *atomic.Uint64, v, to float64) bool {
	for {
		old := cell.Load()
		if v <= math.Float64frombits(old) {
			return false
		}
		if cell.CompareAndSwap(old, math.Float64bits(to)) {
			return true
		}
	}
}

// tighten lowers bounds that have drifted well above the current terms
// (conversion went down), then re-checks them against the counts: a write
// racing with the lowering is caught either here or by its own observe.
// Orders computed from the former, higher bounds stay valid.
func (k *campaignCounter) tighten(c *Counters) {
	a, b := k.convTerms()
	if old := k.hiA.Load(); math.Float64frombits(old) > a+tightenSlack {
		k.hiA.CompareAndSwap(old, math.Float64bits(a+boundMarginA))
	}
	if old := k.hiB.Load(); math.Float64frombits(old) > b+tightenSlack {
		k.hiB.CompareAndSwap(old, math.Float64bits(min(b+boundMarginB, 1)))
	}
	k.observe(c)
}

// convBound bounds Conversion(incidence, sessions, completes) for the
// counts now and until the next logged raise.
func (k *campaignCounter) convBound(incidence int32) float64 {
	a := math.Float64frombits(k.hiA.Load())
	b := math.Float64frombits(k.hiB.Load())
	return min(max(a+b*max(float64(incidence)/100, 0), 0), 1)
}

func (c *Counters) logRaise(id int64) {
	seq := c.raises.Add(1)
	e := &c.raiseLog[seq&raiseMask]
	e.seq.Store(0)
	e.id.Store(id)
	e.seq.Store(seq)
}

// raisedSince appends to dst the ids of the campaigns whose bounds were
// raised after raise number from (an id may repeat). It returns false when
// there are more than limit or the log cannot tell (overwritten or still
// being written): the caller must then not rely on its order.
func (c *Counters) raisedSince(from uint64, limit int, dst []int64) ([]int64, bool) {
	cur := c.raises.Load()
	if cur-from > uint64(limit) {
		return dst, false
	}
	for j := from + 1; j <= cur; j++ {
		e := &c.raiseLog[j&raiseMask]
		if e.seq.Load() != j {
			return dst, false
		}
		id := e.id.Load()
		if e.seq.Load() != j {
			return dst, false
		}
		dst = append(dst, id)
	}
	if c.raises.Load()-from > raiseLogSize-1 {
		return dst, false // entries may have been overwritten while read
	}
	return dst, true
}
