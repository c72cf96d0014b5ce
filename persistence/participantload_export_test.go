package persistence

// swap sets *p to v and returns what restores its value before.
func swap[T any](p *T, v T) (restore func()) {
	old := *p
	*p = v
	return func() { *p = old }
}

// SetLoadStreamPages lowers the table size from which LoadActiveParticipants reads in
// several streams, so that a test table of a few pages is read that way.
func SetLoadStreamPages(n int64) (restore func()) { return swap(&loadStreamPages, n) }

// SetLoadChunk sets how many participant ids one statement of LoadActiveParticipants reads.
func SetLoadChunk(n int64) (restore func()) { return swap(&loadChunk, n) }

// SetBeforeStream runs f before the query of each chunk of LoadActiveParticipants.
func SetBeforeStream(f func(i, n int)) (restore func()) { return swap(&beforeStream, f) }

// SetFewParticipants sets how many participants a load may have for it to read their
// entry history participant by participant.
func SetFewParticipants(n int64) (restore func()) { return swap(&fewParticipants, n) }

// SetFeedSlabs sets the size of the slabs the engine feed carves codes (int32s) and
// conditions from, so that a test's few quotas move between slabs.
func SetFeedSlabs(n int) (restore func()) {
	a, b := swap(&codeSlab, n), swap(&condSlab, n)
	return func() { a(); b() }
}

// SetFeedSlice sets how many campaigns one query of the engine feed's quotas covers.
func SetFeedSlice(n int) (restore func()) { return swap(&feedSlice, n) }

// SetHistoryChunk sets how many session ids one transaction of the entry-history load reads.
func SetHistoryChunk(n int64) (restore func()) { return swap(&historyChunk, n) }

// SetFeedChunk sets how many campaigns one transaction of the whole market's engine feed reads.
func SetFeedChunk(n int) (restore func()) { return swap(&feedChunk, n) }
