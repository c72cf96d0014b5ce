package engine

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// partition is the index of the active campaigns of one country.
//
// Matching evaluates campaigns one at a time, in descending order of an
// upper bound of their EPC (rankOrder), and stops as soon as the k-th best
// offer found beats the bound of the next campaign: with a realistic market
// only a few hundred campaigns are looked at, whatever the market's size.
// Each campaign's quotas and conditions are compiled into flat arrays; a
// condition on a select question (or AGE) is a 128-bit code mask tested
// against the participant's answers compiled the same way, so evaluating a
// campaign touches a few contiguous cache lines. Text conditions (ZIP) and
// codes outside 0..127 go through inverted postings (answer → conditions)
// that are scanned once per match.
type partition struct {
	ctr *Counters

	camps  []campMeta // hot fields, by slot
	cold   []campCold // the rest, by slot
	quotas []quotaMeta
	qdefs  []*Quota // by quota slot
	conds  []condMeta
	qids   []int32 // questions with conditions, sorted; condMeta.qs indexes it

	// Postings from an answer to the conditions it satisfies.
	codes  keyTable // codeKey → code outside 0..127
	shorts keyTable // shortKey → text of at most 7 bytes
	texts  map[textKey]span
	spans  []span // codes and shorts values
	posts  []uint32
	textQs []int32 // numbers text questions for shortKey

	// byID maps a campaign id to its slot here (self, -1 when it is not an
	// active campaign of this country) and to the slots its entry blocks
	// through campaign relationships (blocks[b0:b1]).
	byID   idTable
	blocks []int32

	gates []gate // by slot

	ord        atomic.Pointer[rankOrder]
	alts       []atomic.Pointer[rankOrder] // under a split, the order of arm i+1 (orderAt)
	ordMu      sync.Mutex                  // serializes publishing a new order
	refreshing atomic.Bool
	sinceFull  int        // refreshes since the last full one (reorder); ordMu guards it
	alloc      *allocator // nil: greedy
}

type span struct{ off, n uint32 }

// textKey names a text answer to a question in the postings.
type textKey struct {
	question int32
	text     string
}

// maxTextQs bounds the text questions one partition numbers for shortKey.
const maxTextQs = 255

// shortKey packs a text of 1..7 bytes without NUL bytes (every postal code
// format served) and the number of its question (1..maxTextQs) into one
// integer, injectively.
func shortKey(qnum int, s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 7 || qnum == 0 {
		return 0, false
	}
	v := uint64(qnum) << 56
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return 0, false
		}
		v |= uint64(s[i]) << (8 * i)
	}
	return v, true
}

// textQ returns the number of question q among the partition's text
// questions, 0 when it has none (or too many to number).
func (p *partition) textQ(q int32) int {
	for i, x := range p.textQs {
		if x == q {
			return i + 1
		}
	}
	return 0
}

type idRef struct {
	self   int32
	b0, b1 int32
	// reentry is the campaign's reentry minutes (its cold record's), here so that marking a
	// participant's entries reads no cold record: at 100k campaigns each of those reads
	// missed the cache, half of the marking's time.
	reentry int32
}

// campMeta is what matching reads of every campaign it evaluates.
type campMeta struct {
	cpi        int64
	counter    *campaignCounter
	q0, g0, q1 int32 // quotas [q0,g0) non-global, [g0,q1) global
	maxDaily   int32
	inc        int32
	devices    uint8 // 0 all
	restricted bool  // cold.restriction != nil
}

// campCold is the rest of a campaign: read for offers and entry rules.
type campCold struct {
	id, buyer   int64
	loi         int32
	reentry     int32 // minutes; ReentryNever; 0 unlimited
	restriction *restrictions
	def         *Campaign
}

// quotaMeta is the matching view of one quota.
type quotaMeta struct {
	counter       *quotaCounter
	num           int64
	c0, nc        uint32 // conditions conds[c0:c0+nc]
	clickBalanced bool
	global        bool
}

// condMeta is one compiled condition: it matches when the participant's
// codes for question qids[qs] meet mask, or (posted) when a posting of one
// of the participant's answers named it during this match.
type condMeta struct {
	mask   [2]uint64 // codes 0..127
	qs     uint32
	posted bool // has texts or codes outside 0..127
}

// maskCodes is the code range conditions keep as a mask.
const maskCodes = 128

func codeKey(q int32, code int32) uint64 { return uint64(uint32(q))<<32 | uint64(uint32(code)) }

// qslot returns the index of question q in qids, or -1.
func (p *partition) qslot(q int32) int {
	if len(p.qids) <= 16 {
		for i, x := range p.qids {
			if x == q {
				return i
			}
		}
		return -1
	}
	if i, ok := slices.BinarySearch(p.qids, q); ok {
		return i
	}
	return -1
}

// indexRelations fills byID: every campaign's own slot, and for every
// campaign id named in a relationship the slots an entry into it blocks.
func (p *partition) indexRelations() {
	p.byID.init(len(p.cold))
	for ci := range p.cold {
		p.byID.set(p.cold[ci].id, idRef{self: int32(ci), reentry: p.cold[ci].reentry})
	}
	blocked := make(map[int64][]int32)
	var order []int64
	for ci := range p.cold {
		c := p.cold[ci].def
		for _, r := range c.Related {
			if r == c.ID {
				continue
			}
			if _, seen := blocked[r]; !seen {
				order = append(order, r)
			}
			blocked[r] = append(blocked[r], int32(ci))
		}
	}
	for _, r := range order {
		ref, ok := p.byID.get(r)
		if !ok {
			ref.self = -1
		}
		ref.b0 = int32(len(p.blocks))
		p.blocks = append(p.blocks, blocked[r]...)
		ref.b1 = int32(len(p.blocks))
		p.byID.set(r, ref)
	}
}

// bytes estimates the memory the partition holds (its own arrays and maps,
// not the campaign definitions it points to).
func (p *partition) bytes() int {
	const mapEntryOverhead = 8 // control byte and load-factor slack, roughly
	n := cap(p.camps)*int(unsafe.Sizeof(campMeta{})) +
		cap(p.cold)*int(unsafe.Sizeof(campCold{})) +
		cap(p.quotas)*int(unsafe.Sizeof(quotaMeta{})) + cap(p.qdefs)*8 +
		cap(p.conds)*int(unsafe.Sizeof(condMeta{})) +
		cap(p.posts)*4 + cap(p.spans)*int(unsafe.Sizeof(span{})) + cap(p.blocks)*4 +
		cap(p.gates)*int(unsafe.Sizeof(gate{})) +
		p.codes.bytes() + p.shorts.bytes()
	for i := range 1 + len(p.alts) {
		if o := p.orderAt(i).Load(); o != nil {
			n += cap(o.slots)*4 + (cap(o.keys)+cap(o.w)+cap(o.x)+cap(o.qw))*8 + cap(o.explorers)*int(unsafe.Sizeof(explorer{})) +
				cap(o.gates)*int(unsafe.Sizeof(gate{}))
		}
	}
	for k := range p.texts {
		n += int(unsafe.Sizeof(k)+unsafe.Sizeof(span{})) + mapEntryOverhead + len(k.text)
	}
	n += p.byID.bytes()
	for i := range p.cold {
		if r := p.cold[i].restriction; r != nil {
			n += int(unsafe.Sizeof(*r)) + (cap(r.excluded)+cap(r.suppliers))*8 + cap(r.byID)*16 +
				(cap(r.byDevice)+cap(r.byHash))*int(unsafe.Sizeof(textExpiry{}))
		}
	}
	return n
}
