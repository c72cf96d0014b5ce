package marketsim

import "github.com/switchboard/switchboard/engine"

// probeTruth is the probe campaign's true conversion; probeIncidence its
// stated incidence (percent), half of it.
const (
	probeTruth     = 0.40
	probeIncidence = 20
	// probeTarget is the probe's target: about 100 sessions at its true
	// conversion, past the 80 its estimate needs on average.
	probeTarget = 40
)

// probeShown reports whether the probe is among the first n offers.
func probeShown(offers []engine.Offer, n int, probe int64) bool {
	for i := range min(n, len(offers)) {
		if offers[i].CampaignID == probe {
			return true
		}
	}
	return false
}

// probeFair reports whether the probe, ranked at its oracle score (its
// score had the engine known its true conversion), would be among the
// first n offers: fewer than n other offers beat it. offers must be the
// top n+1, so that every other offer that could beat it is there.
func probeFair(offers []engine.Offer, n int, probe int64, oracle float64) bool {
	beat := 0
	for _, o := range offers {
		if o.CampaignID != probe && (o.Score > oracle || (o.Score == oracle && o.CampaignID < probe)) {
			beat++
		}
	}
	return beat < n
}

// fairWindow compares, over the last n eligible visits of the probe, how
// often it was shown with how often it would have been at its true
// conversion.
type fairWindow struct {
	shown, fair       []bool
	at, count         int
	shownSum, fairSum int
	shownAll, fairAll int
}

func newFairWindow(n int) *fairWindow {
	return &fairWindow{shown: make([]bool, n), fair: make([]bool, n)}
}

// add records one eligible visit and reports whether the window is full
// and the probe was shown at least 80% as often as its fair share.
func (w *fairWindow) add(shown, fair bool) bool {
	n := len(w.shown)
	if w.count == n {
		w.shownSum -= b2i(w.shown[w.at])
		w.fairSum -= b2i(w.fair[w.at])
	} else {
		w.count++
	}
	w.shown[w.at], w.fair[w.at] = shown, fair
	w.shownSum += b2i(shown)
	w.fairSum += b2i(fair)
	w.shownAll += b2i(shown)
	w.fairAll += b2i(fair)
	w.at = (w.at + 1) % n
	return w.count == n && w.fairSum > 0 && 5*w.shownSum >= 4*w.fairSum
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
