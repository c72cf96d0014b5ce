package persistence

// SetLoadStreamPages lowers the table size from which LoadActiveParticipants reads in
// several streams, so that a test table of a few pages is read that way.
func SetLoadStreamPages(n int64) (restore func()) {
	old := loadStreamPages
	loadStreamPages = n
	return func() { loadStreamPages = old }
}

// SetBeforeStream runs f in each stream of LoadActiveParticipants before its query.
func SetBeforeStream(f func(i, n int)) (restore func()) {
	beforeStream = f
	return func() { beforeStream = nil }
}

// SetFewParticipants sets how many participants a load may have for it to read their
// entry history participant by participant.
func SetFewParticipants(n int64) (restore func()) {
	old := fewParticipants
	fewParticipants = n
	return func() { fewParticipants = old }
}

// SetFeedSlice sets how many campaigns one query of the engine feed's quotas covers.
func SetFeedSlice(n int) (restore func()) {
	old := feedSlice
	feedSlice = n
	return func() { feedSlice = old }
}

// SetHistoryChunk sets how many session ids one transaction of the entry-history load reads.
func SetHistoryChunk(n int64) (restore func()) {
	old := historyChunk
	historyChunk = n
	return func() { historyChunk = old }
}

// SetFeedChunk sets how many campaigns one transaction of the whole market's engine feed reads.
func SetFeedChunk(n int) (restore func()) {
	old := feedChunk
	feedChunk = n
	return func() { feedChunk = old }
}
