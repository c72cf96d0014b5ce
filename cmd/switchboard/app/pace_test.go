package app

import (
	"testing"
	"time"
)

// A paced snapshot write rests as long as it worked at half duty, a third as long at three
// quarters, and never unpaced.
func TestPaceKeepsItsDuty(t *testing.T) {
	for _, duty := range []float64{0.5, 0.75, 1} {
		var rested time.Duration
		p := pace{duty: duty, since: time.Now(), sleep: func(d time.Duration) { rested += d }}
		start := time.Now()
		for range 8 * paceEvery {
			for spin := time.Now(); time.Since(spin) < time.Microsecond; {
			}
			p.step()
		}
		worked := time.Since(start)
		want := time.Duration(float64(worked) * (1 - duty) / duty)
		if rested < want*7/10 || rested > want {
			t.Errorf("duty %.2f: rested %s after %s of work, want about %s", duty, rested, worked, want)
		}
	}
}
