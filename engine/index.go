package engine

import (
	"sync"
	"unsafe"
)

// condBits is the number of conditions a quota can have in the index (one
// bit each in a uint32 mask). A quota with more is evaluated directly.
const condBits = 32

// partition is the index of the active campaigns of one country. Campaigns
// and quotas live in dense slots; a campaign's quotas are contiguous, the
// non-global ones first.
type partition struct {
	camps  []campMeta
	quotas []quotaMeta

	// Postings: an answer (question, code) or (question, normalized text)
	// names a span of posts; a post packs the quota slot, the quota's number
	// of conditions and the condition's bit (see makePost), so a hit needs no
	// other memory access to tell whether the quota is now fully matched.
	codes  map[uint64]span
	shorts map[uint64]span  // texts of at most 7 bytes, see shortKey
	texts  map[textKey]span // longer texts
	posts  []uint32
	// textQs numbers the questions with text conditions for shortKey.
	textQs []int32

	always []int32 // non-global quotas without conditions: they match everyone
	wide   []int32 // non-global quotas with more than condBits conditions

	// byID maps a campaign id to its slot here (self, -1 when it is not an
	// active campaign of this country) and to the slots its entry blocks
	// through campaign relationships (blocks[b0:b1]).
	byID   map[int64]idRef
	blocks []int32
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
// integer, injectively. Integer keys take the map's fast path and need no
// string hashing or comparison: building the index is several times faster
// than with string keys, and postal code lists are most of its postings.
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
}

// campMeta is the matching view of one campaign.
type campMeta struct {
	id, buyer   int64
	cpiCents    int64
	loi, inc    int32
	maxDaily    int32
	reentry     int32 // minutes; ReentryNever; 0 unlimited
	devices     uint8 // 0 all
	q0, g0, q1  int32 // quotas [q0,g0) non-global, [g0,q1) global
	counter     *campaignCounter
	restriction *restrictions // nil when the campaign has no exclusions nor retargets
	def         *Campaign
}

// quotaMeta is the matching view of one quota.
type quotaMeta struct {
	camp          int32
	full          uint32 // mask with one bit per condition; 0 for no conditions
	num           int64
	clickBalanced bool
	global        bool
	wide          bool // more than condBits conditions: evaluated directly
	counter       *quotaCounter
	def           *Quota
}

func codeKey(q int32, code int32) uint64 { return uint64(uint32(q))<<32 | uint64(uint32(code)) }

// maxPostSlot bounds the quota slots a post can name (22 bits); quotas past
// it, like wide ones, are evaluated directly.
const maxPostSlot = 1<<22 - 1

// makePost packs quota slot, condition count n (1..condBits) and condition
// bit into one posting.
func makePost(slot int32, n, bit int) uint32 {
	return uint32(slot)<<10 | uint32(n-1)<<5 | uint32(bit)
}

// postSlot, postBit and postFull unpack a posting.
func postSlot(p uint32) uint32 { return p >> 10 }
func postBit(p uint32) uint32  { return 1 << (p & 31) }
func postFull(p uint32) uint32 { return uint32(uint64(2)<<((p>>5)&31) - 1) }

// postBuilder collects postings in two passes: keys are numbered as they
// appear, then laid out contiguously per key.
type postBuilder[K comparable] struct {
	keyIdx map[K]int32
	keys   []K
	counts []uint32
	idx    []int32 // key index of each posting, in order
	post   []uint32
}

func newPostBuilder[K comparable](keys, posts int) *postBuilder[K] {
	return &postBuilder[K]{keyIdx: make(map[K]int32, keys), idx: make([]int32, 0, posts), post: make([]uint32, 0, posts)}
}

func (b *postBuilder[K]) add(key K, post uint32) {
	i, ok := b.keyIdx[key]
	if !ok {
		i = int32(len(b.keys))
		b.keyIdx[key] = i
		b.keys = append(b.keys, key)
		b.counts = append(b.counts, 0)
	}
	b.counts[i]++
	b.idx = append(b.idx, i)
	b.post = append(b.post, post)
}

// layout writes the postings into posts (appending) and returns the key map.
func (b *postBuilder[K]) layout(posts []uint32) (map[K]span, []uint32) {
	m := make(map[K]span, len(b.keys))
	base := uint32(len(posts))
	next := make([]uint32, len(b.keys))
	off := base
	for i, k := range b.keys {
		m[k] = span{off, b.counts[i]}
		next[i] = off
		off += b.counts[i]
	}
	posts = append(posts, make([]uint32, len(b.post))...)
	for j, p := range b.post {
		i := b.idx[j]
		posts[next[i]] = p
		next[i]++
	}
	return m, posts
}

// buildPartition indexes the given active campaigns of one country, taking
// counter pointers from ctr.
func buildPartition(defs []*Campaign, ctr *Counters) *partition {
	nq, ncodes, ntexts := 0, 0, 0
	for _, c := range defs {
		nq += len(c.Quotas)
		for i := range c.Quotas {
			for _, cond := range c.Quotas[i].Conditions {
				ncodes += len(cond.Codes)
				ntexts += len(cond.Texts)
			}
		}
	}
	p := &partition{
		camps:  make([]campMeta, len(defs)),
		quotas: make([]quotaMeta, 0, nq),
		byID:   make(map[int64]idRef, len(defs)),
	}
	codes := newPostBuilder[uint64](min(ncodes, 4096), ncodes)
	shorts := newPostBuilder[uint64](min(ntexts, 1<<16), ntexts)
	texts := newPostBuilder[textKey](0, 0)

	for ci, c := range defs {
		m := &p.camps[ci]
		*m = campMeta{
			id: c.ID, buyer: c.BuyerID, cpiCents: c.CPICents,
			loi: int32(c.LOI), inc: int32(c.Incidence),
			maxDaily: int32(c.MaxDailyCompletes), reentry: int32(c.ReentryMinutes),
			devices: c.Devices, counter: ctr.campaign(c.ID),
			restriction: newRestrictions(c), def: c,
		}
		m.q0 = int32(len(p.quotas))
		for pass := 0; pass < 2; pass++ { // non-global quotas first, then global
			if pass == 1 {
				m.g0 = int32(len(p.quotas))
			}
			for qi := range c.Quotas {
				q := &c.Quotas[qi]
				if q.Global != (pass == 1) {
					continue
				}
				slot := int32(len(p.quotas))
				meta := quotaMeta{
					camp: int32(ci), num: int64(q.NumRespondents),
					clickBalanced: q.ClickBalanced, global: q.Global,
					counter: ctr.quota(q.ID), def: q,
				}
				switch n := len(q.Conditions); {
				case n > condBits || (n > 0 && slot > maxPostSlot):
					meta.wide = true
					if !q.Global {
						p.wide = append(p.wide, slot)
					}
				case n == 0:
					if !q.Global {
						p.always = append(p.always, slot)
					}
				default:
					meta.full = uint32(uint64(1)<<n - 1)
					for _, cond := range q.Conditions {
						if len(cond.Texts) > 0 {
							p.numberTextQ(cond.QuestionID)
						}
					}
				}
				p.quotas = append(p.quotas, meta)
			}
		}
		m.q1 = int32(len(p.quotas))
	}
	// Code and text postings are independent: collect them on two cores.
	var wg sync.WaitGroup
	wg.Go(func() { p.collect(codes, nil, nil) })
	p.collect(nil, shorts, texts)
	wg.Wait()

	p.posts = make([]uint32, 0, len(codes.post)+len(shorts.post)+len(texts.post))
	p.codes, p.posts = codes.layout(p.posts)
	p.shorts, p.posts = shorts.layout(p.posts)
	p.texts, p.posts = texts.layout(p.posts)
	p.indexRelations()
	return p
}

// collect adds the postings of every indexed quota's conditions: codes to
// codes, texts to shorts or texts (a nil builder skips that kind).
func (p *partition) collect(codes, shorts *postBuilder[uint64], texts *postBuilder[textKey]) {
	for slot := range p.quotas {
		qm := &p.quotas[slot]
		if qm.full == 0 || qm.wide {
			continue
		}
		n := len(qm.def.Conditions)
		for bit, cond := range qm.def.Conditions {
			post := makePost(int32(slot), n, bit)
			if codes != nil {
				for _, code := range cond.Codes {
					codes.add(codeKey(cond.QuestionID, code), post)
				}
			}
			if shorts == nil || len(cond.Texts) == 0 {
				continue
			}
			qnum := p.textQ(cond.QuestionID)
			for _, t := range cond.Texts {
				t = NormalizeText(t)
				if k, ok := shortKey(qnum, t); ok {
					shorts.add(k, post)
				} else {
					texts.add(textKey{cond.QuestionID, t}, post)
				}
			}
		}
	}
}

// numberTextQ returns the number of text question q, numbering it when new
// (0 once maxTextQs questions are numbered: its texts use the string map).
func (p *partition) numberTextQ(q int32) int {
	if n := p.textQ(q); n != 0 || len(p.textQs) == maxTextQs {
		return n
	}
	p.textQs = append(p.textQs, q)
	return len(p.textQs)
}

// indexRelations fills byID: every campaign's own slot, and for every
// campaign id named in a relationship the slots an entry into it blocks.
func (p *partition) indexRelations() {
	for ci := range p.camps {
		p.byID[p.camps[ci].id] = idRef{self: int32(ci)}
	}
	blocked := make(map[int64][]int32)
	var order []int64
	for ci := range p.camps {
		c := p.camps[ci].def
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
		ref, ok := p.byID[r]
		if !ok {
			ref.self = -1
		}
		ref.b0 = int32(len(p.blocks))
		p.blocks = append(p.blocks, blocked[r]...)
		ref.b1 = int32(len(p.blocks))
		p.byID[r] = ref
	}
}

// bytes estimates the memory the partition holds (its own arrays and maps,
// not the campaign definitions it points to).
func (p *partition) bytes() int {
	const mapEntryOverhead = 8 // control byte and load-factor slack, roughly
	n := cap(p.camps)*int(unsafe.Sizeof(campMeta{})) +
		cap(p.quotas)*int(unsafe.Sizeof(quotaMeta{})) +
		cap(p.posts)*4 + (cap(p.always)+cap(p.wide)+cap(p.blocks))*4
	n += len(p.codes) * (8 + int(unsafe.Sizeof(span{})) + mapEntryOverhead)
	n += len(p.shorts) * (8 + int(unsafe.Sizeof(span{})) + mapEntryOverhead)
	for k := range p.texts {
		n += int(unsafe.Sizeof(k)+unsafe.Sizeof(span{})) + mapEntryOverhead + len(k.text)
	}
	n += len(p.byID) * (8 + int(unsafe.Sizeof(idRef{})) + mapEntryOverhead)
	for i := range p.camps {
		if r := p.camps[i].restriction; r != nil {
			n += int(unsafe.Sizeof(*r)) + cap(r.excluded)*8 + cap(r.byID)*16 +
				(cap(r.byDevice)+cap(r.byHash))*int(unsafe.Sizeof(textExpiry{}))
		}
	}
	return n
}
