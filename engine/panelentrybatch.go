package engine

import "sync"

// The batched load of entry histories: RecordEntries resolves the rows of a
// batch under shared locks, groups them by shard, then records each shard's
// share under one write lock.

// EntryRow is one entry of a participant into a campaign at At (unix seconds), as a bulk
// load hands them to RecordEntries.
type EntryRow struct {
	Participant, Campaign, At int64
}

// RecordEntries records every row as RecordEntry would, in order, and returns how many
// named a known participant (the others are ignored). It is the start-up load's form: rows
// in no particular order touch rows all over the panel, so RecordEntry spends its time
// waiting for memory and on two locks a row. RecordEntries resolves the participants of
// hundreds of rows under every id-index and shard read lock at once, then records each
// shard's rows of the batch under one write lock, the rows' independent memory reads
// overlapping; every lock is held for tens of microseconds at most.
func (pl *Panel) RecordEntries(rows []EntryRow) int {
	sc := entryScratchPool.Get().(*entryScratch)
	defer entryScratchPool.Put(sc)
	done := 0
	for len(rows) > 0 {
		n := min(len(rows), entryBatch)
		done += pl.recordEntries(rows[:n], sc)
		rows = rows[n:]
	}
	return done
}

// entryBatch is the most rows RecordEntries holds the panel's locks for at once.
const entryBatch = 4096

// entryScratch is RecordEntries' working memory (a few tens of KB, pooled).
type entryScratch struct {
	refs  [entryBatch]uint32 // each row's ref + 1 (0: unknown participant)
	order [entryBatch]uint16 // row indices grouped by shard
	count [panelShards + 1]int
	touch uint64 // what touching rows read (kept so that the reads are not left out)
}

var entryScratchPool = sync.Pool{New: func() any { return new(entryScratch) }}

func (pl *Panel) recordEntries(rows []EntryRow, sc *entryScratch) int {
	for i := 0; i < len(rows); i += refChunk {
		pl.resolveRefs(rows[i:min(i+refChunk, len(rows))], sc.refs[i:])
	}
	sc.groupByShard(len(rows))
	// count[si] is now the end of shard si's rows, count[si-1] their start.
	start := 0
	for si := range pl.shards {
		end := sc.count[si]
		if end == start {
			continue
		}
		sc.touch += pl.shards[si].recordBatch(rows, sc.refs[:], sc.order[start:end])
		start = end
	}
	return start
}

// groupByShard fills order with the indices of the first n rows that name a known
// participant, grouped by shard and in their order within a shard (a counting sort),
// leaving count[si] at the end of shard si's group.
func (sc *entryScratch) groupByShard(n int) {
	clear(sc.count[:])
	for _, v := range sc.refs[:n] {
		if v != 0 {
			sc.count[(v-1)>>rowBits+1]++
		}
	}
	for i := 1; i <= panelShards; i++ {
		sc.count[i] += sc.count[i-1]
	}
	for k := range n {
		if ref := sc.refs[k]; ref != 0 {
			si := (ref - 1) >> rowBits
			sc.order[sc.count[si]] = uint16(k)
			sc.count[si]++
		}
	}
}

// recordBatch records rows[k] for each k of order, all rows of this shard, under one hold
// of its write lock (refs[k] is rows[k]'s ref + 1). It returns what touching the rows read.
func (s *panelShard) recordBatch(rows []EntryRow, refs []uint32, order []uint16) uint64 {
	s.mu.Lock()
	// Touch the rows' memory first, in passes of independent reads (as resolveRefs does).
	var touch uint64
	for _, k := range order {
		r := (refs[k] - 1) & (1<<rowBits - 1)
		touch += s.act[r] + uint64(s.version[r]) + uint64(len(s.entries.get(r)))
	}
	for _, k := range order {
		if e := s.entries.get((refs[k] - 1) & (1<<rowBits - 1)); len(e) > 0 {
			touch += uint64(e[0])
		}
	}
	for _, k := range order {
		row, r := &rows[k], (refs[k]-1)&(1<<rowBits-1)
		if entries, changed := recordEntry(s.entries.get(r), Entry{row.Campaign, row.At}); changed {
			s.entries.set(r, entries)
			s.version[r]++
		}
		if v, changed := touchedActivity(s.act[r], row.At); changed {
			s.act[r] = v // no CAS: the exclusive lock keeps Touch out
		}
	}
	s.mu.Unlock()
	return touch
}

// refChunk is the most rows resolveRefs resolves under the panel's read locks at once
// (tens of microseconds: a writer, and the readers queued behind it, wait no longer).
const refChunk = 512

// resolveRefs sets refs[k] to the ref + 1 of rows[k]'s participant (0: unknown), under every
// id-index then every shard read lock (the lock order of byID). Each row's first candidate
// slot, then its check, then (rarely) the rest of its probe: passes of independent reads,
// which the processor overlaps, rather than one row's chain of cache misses after another's.
func (pl *Panel) resolveRefs(rows []EntryRow, refs []uint32) {
	for i := range pl.ids {
		pl.ids[i].mu.RLock()
	}
	for i := range pl.shards {
		pl.shards[i].mu.RLock()
	}
	for k := range rows {
		id := rows[k].Participant
		x := &pl.ids[idHash(id)%panelShards]
		if n := len(x.table); n > 0 {
			refs[k] = x.table[slotOf(idHash(id), n)]
		} else {
			refs[k] = 0
		}
	}
	for k := range rows {
		if v, id := refs[k], rows[k].Participant; v == 0 || pl.shards[(v-1)>>rowBits].id[(v-1)&(1<<rowBits-1)] != id {
			refs[k] = pl.refLocked(id)
		}
	}
	for i := range pl.shards {
		pl.shards[i].mu.RUnlock()
	}
	for i := range pl.ids {
		pl.ids[i].mu.RUnlock()
	}
}
