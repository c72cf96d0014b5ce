package payout

import (
	"slices"
	"time"

	"github.com/switchboard/switchboard/persistence"
)

// slots are a worker's delivery slots: at most total deliveries in flight, at most per of
// them to one destination (a partner, or a buyer's webhook), so that a slow endpoint holds
// only its share and every other destination keeps the rest. Postbacks handed over by Send
// wait for a slot in one queue per destination, served in turn. Only Run touches a slots;
// deliveries report their end on finished.
type slots struct {
	total, per int
	inFlight   int
	busy       map[persistence.Destination]int // deliveries in flight per destination

	waiting map[persistence.Destination][]handed // handed-over postbacks waiting, oldest first
	order   []persistence.Destination            // the destinations with waiting postbacks, in turn
	turn    int                                  // where the next round of starts begins in order
	queued  int                                  // postbacks waiting, every destination's

	// left are the destinations whose last claim reached their room: they may have more
	// rows due, to claim once one of their deliveries ends.
	left map[persistence.Destination]bool

	finished chan persistence.Destination // a delivery's destination, once it is recorded
}

func newSlots(total, per int) *slots {
	return &slots{total: total, per: per, busy: map[persistence.Destination]int{},
		waiting: map[persistence.Destination][]handed{}, left: map[persistence.Destination]bool{}, finished: make(chan persistence.Destination, total)}
}

// free is how many more deliveries may start.
func (s *slots) free() int { return s.total - s.inFlight }

// take counts a delivery of c as started and returns its destination.
func (s *slots) take(c persistence.ClaimedPostback) persistence.Destination {
	d := c.Destination()
	s.busy[d]++
	s.inFlight++
	return d
}

// done counts a delivery to d as ended, and reports whether d may have rows due that its
// room left in the table and now has half its room free: worth a claim (claims come in
// batches, not one per delivery).
func (s *slots) done(d persistence.Destination) (left bool) {
	s.inFlight--
	if s.busy[d]--; s.busy[d] <= 0 {
		delete(s.busy, d)
	}
	return s.left[d] && s.busy[d] <= s.per/2
}

// collect counts every delivery that has ended since the last look, and reports whether one
// of them went to a destination with rows left.
func (s *slots) collect() (left bool) {
	for {
		select {
		case d := <-s.finished:
			left = s.done(d) || left
		default:
			return left
		}
	}
}

// claimed notes what a claim made of the destinations' room, before its rows start: one
// that got all of its room may have more rows due; one that got less had no more in the
// claim's window (when the window was not full, none at all). Destinations full before the
// claim were not looked at and keep their note.
func (s *slots) claimed(rows []persistence.ClaimedPostback, windowFull bool) {
	got := map[persistence.Destination]int{}
	for _, c := range rows {
		got[c.Destination()]++
	}
	for d := range s.left {
		if _, ok := got[d]; !ok && s.busy[d] < s.per && !windowFull {
			delete(s.left, d)
		}
	}
	for d, n := range got {
		if n >= s.per-s.busy[d] {
			s.left[d] = true
		} else if !windowFull {
			delete(s.left, d)
		}
	}
}

// queue makes h wait for a slot of its destination.
func (s *slots) queue(h handed) {
	d := h.c.Destination()
	if len(s.waiting[d]) == 0 {
		s.order = append(s.order, d)
	}
	s.waiting[d] = append(s.waiting[d], h)
	s.queued++
}

// expired takes out of the queues the postbacks whose start window has passed at now: they
// go back to the table rather than start late.
func (s *slots) expired(now time.Time) []persistence.ClaimedPostback {
	if s.queued == 0 {
		return nil
	}
	var out []persistence.ClaimedPostback
	for _, d := range s.order {
		q := s.waiting[d]
		n := 0
		for n < len(q) && now.After(q[n].startBy) { // a queue is in start-by order
			out = append(out, q[n].c)
			n++
		}
		s.pop(d, n)
	}
	s.prune()
	return out
}

// startable takes out of the queues the postbacks that may start now: while slots are free,
// one per destination with room in turn. The caller starts each (take).
func (s *slots) startable() []persistence.ClaimedPostback {
	if s.queued == 0 || s.free() == 0 {
		return nil
	}
	var out []persistence.ClaimedPostback
	free := s.free()
	started := map[persistence.Destination]int{}
	for progress := true; progress && free > 0 && len(s.order) > 0; {
		progress = false
		for i := range len(s.order) {
			if free == 0 {
				break
			}
			d := s.order[(s.turn+i)%len(s.order)]
			if len(s.waiting[d]) == 0 || s.busy[d]+started[d] >= s.per {
				continue
			}
			out = append(out, s.waiting[d][0].c)
			s.pop(d, 1)
			started[d]++
			free--
			progress = true
		}
	}
	if len(s.order) > 0 {
		s.turn = (s.turn + 1) % len(s.order)
	}
	s.prune()
	return out
}

// pop removes the first n postbacks waiting for d.
func (s *slots) pop(d persistence.Destination, n int) {
	if n == 0 {
		return
	}
	q := s.waiting[d]
	clear(q[:n]) // the bodies and secrets they hold are not kept alive
	s.waiting[d] = q[n:]
	s.queued -= n
}

// prune forgets the destinations with nothing waiting.
func (s *slots) prune() {
	s.order = slices.DeleteFunc(s.order, func(d persistence.Destination) bool {
		if len(s.waiting[d]) == 0 {
			delete(s.waiting, d)
			return true
		}
		return false
	})
	if s.turn >= len(s.order) {
		s.turn = 0
	}
}
