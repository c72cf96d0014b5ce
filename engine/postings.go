package engine

import (
	"slices"
	"unsafe"
)

// keyTable maps uint64 keys to dense indexes (open addressing, linear
// probing). Building the postings takes one probe per posting instead of a
// map access, and matching one probe per answer.
type keyTable struct {
	keys  []uint64
	vals  []int32 // -1: empty
	shift uint8
	n     int
}

const keyHashMul = 0x9e3779b97f4a7c15

func (t *keyTable) init(hint int) {
	size := 16
	for size < 2*hint {
		size <<= 1
	}
	t.keys = make([]uint64, size)
	t.vals = make([]int32, size)
	for i := range t.vals {
		t.vals[i] = -1
	}
	t.shift = uint8(64 - log2(size))
	t.n = 0
}

func log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	return l
}

// get returns the index of k, or -1.
func (t *keyTable) get(k uint64) int32 {
	if t.n == 0 {
		return -1
	}
	mask := uint64(len(t.keys) - 1)
	for i := (k * keyHashMul) >> t.shift; ; i = (i + 1) & mask {
		v := t.vals[i]
		if v < 0 || t.keys[i] == k {
			return v
		}
	}
}

// put returns the index of k, giving it index next when new (added true).
func (t *keyTable) put(k uint64, next int32) (int32, bool) {
	if len(t.keys) == 0 || 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	mask := uint64(len(t.keys) - 1)
	for i := (k * keyHashMul) >> t.shift; ; i = (i + 1) & mask {
		v := t.vals[i]
		if v < 0 {
			t.keys[i], t.vals[i] = k, next
			t.n++
			return next, true
		}
		if t.keys[i] == k {
			return v, false
		}
	}
}

func (t *keyTable) grow() {
	keys, vals := t.keys, t.vals
	t.init(max(len(keys), 8))
	for i, v := range vals {
		if v >= 0 {
			t.put(keys[i], v)
		}
	}
}

func (t *keyTable) bytes() int { return cap(t.keys)*8 + cap(t.vals)*4 }

// idTable maps campaign ids to their idRef: one probe for each entry of a
// participant's history a match marks, where a map hashed and scanned a group.
type idTable struct {
	keys keyTable // id → index into refs
	refs []idRef
}

// init sizes the table for about n ids.
func (t *idTable) init(n int) {
	t.keys.init(n)
	t.refs = make([]idRef, 0, n)
}

func (t *idTable) get(id int64) (idRef, bool) {
	i := t.keys.get(uint64(id))
	if i < 0 {
		return idRef{}, false
	}
	return t.refs[i], true
}

func (t *idTable) set(id int64, r idRef) {
	i, added := t.keys.put(uint64(id), int32(len(t.refs)))
	if added {
		t.refs = append(t.refs, r)
		return
	}
	t.refs[i] = r
}

func (t *idTable) bytes() int { return t.keys.bytes() + cap(t.refs)*int(unsafe.Sizeof(idRef{})) }

// postBuilder collects postings (key → condition index) in two passes: keys
// are numbered as they appear, then postings are laid out contiguously per
// key. Integer keys (codes and short texts) share one numbering.
type postBuilder struct {
	codes, shorts keyTable
	textIdx       map[textKey]int32
	counts        []uint32 // per key index
	idx           []int32  // key index of each posting, in order
	post          []uint32
}

// reserve makes room for n postings, so that a market's millions of them (ZIP codes) are
// not copied again each time their slices grow.
func (b *postBuilder) reserve(n int) {
	b.idx = slices.Grow(b.idx, n)
	b.post = slices.Grow(b.post, n)
}

func (b *postBuilder) key(i int32, added bool, post uint32) {
	if added {
		b.counts = append(b.counts, 0)
	}
	b.counts[i]++
	b.idx = append(b.idx, i)
	b.post = append(b.post, post)
}

func (b *postBuilder) addCode(k uint64, post uint32) {
	i, added := b.codes.put(k, int32(len(b.counts)))
	b.key(i, added, post)
}

func (b *postBuilder) addShort(k uint64, post uint32) {
	if len(b.shorts.keys) == 0 {
		b.shorts.init(1 << 12)
	}
	i, added := b.shorts.put(k, int32(len(b.counts)))
	b.key(i, added, post)
}

func (b *postBuilder) addText(k textKey, post uint32) {
	if b.textIdx == nil {
		b.textIdx = make(map[textKey]int32)
	}
	i, ok := b.textIdx[k]
	if !ok {
		i = int32(len(b.counts))
		b.textIdx[k] = i
	}
	b.key(i, !ok, post)
}

// layout returns the lookup tables, the span of every key index and the
// postings.
func (b *postBuilder) layout() (codes, shorts keyTable, texts map[textKey]span, spans []span, posts []uint32) {
	spans = make([]span, len(b.counts))
	next := make([]uint32, len(b.counts))
	off := uint32(0)
	for i, n := range b.counts {
		spans[i] = span{off, n}
		next[i] = off
		off += n
	}
	posts = make([]uint32, len(b.post))
	for j, p := range b.post {
		i := b.idx[j]
		posts[next[i]] = p
		next[i]++
	}
	if len(b.textIdx) > 0 {
		texts = make(map[textKey]span, len(b.textIdx))
		for k, i := range b.textIdx {
			texts[k] = spans[i]
		}
	}
	return b.codes, b.shorts, texts, spans, posts
}
