package marketsim

// Event kinds.
const (
	evVisit   = iota // a participant arrives
	evOutcome        // a session's complete or screen-out reaches the engine
	evRelease        // an abandoned session times out
)

// event is something that happens at a time: a visit, or the end of a
// session of a chain.
type event struct {
	at, seq  int64
	kind     uint8
	done     bool // evOutcome: a complete
	campaign int64
	quotas   []int64
	ch       *chain
}

// events is a min-heap of events by time, then by order of scheduling.
type events []*event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h events) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// chain is one visit's path through sessions: the campaigns tried and the
// re-routing attempts used.
type chain struct {
	pi                 int // participant index
	visit              uint64
	tried              []int64
	attempts           int
	entered, completed bool
}
