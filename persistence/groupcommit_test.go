package persistence

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// ranBatch is one batch a groupCommit ran, and when.
type ranBatch struct {
	at   time.Time
	jobs []int
}

// startGroupCommit runs a groupCommit of ints with one worker and the given cycle, handing
// each batch to the returned channel.
func startGroupCommit(t *testing.T, cycle time.Duration) (*groupCommit[int], <-chan ranBatch) {
	t.Helper()
	ran := make(chan ranBatch, 16)
	g := &groupCommit[int]{}
	g.start(EntryWriterConfig{Workers: 1, MaxBatch: 4 * cycleFill, Cycle: cycle}, func(batch []int) {
		ran <- ranBatch{at: time.Now(), jobs: slices.Clone(batch)}
	})
	t.Cleanup(g.close)
	return g, ran
}

func offerJob(t *testing.T, g *groupCommit[int], j int) {
	t.Helper()
	if err := g.offer(1, j, nil, func() error { return errors.New("unreachable") }); err != nil {
		t.Fatal(err)
	}
}

func nextBatch(t *testing.T, ran <-chan ranBatch) ranBatch {
	t.Helper()
	select {
	case b := <-ran:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("no batch ran within 5 s")
		return ranBatch{}
	}
}

// TestGroupCommitCycle: with a cycle, a job that comes less than a cycle after the last
// batch started waits out the rest of it, and the jobs that come meanwhile join its batch;
// a batch that fills to cycleFill, or a job that comes to a worker idle for longer than a
// cycle, runs at once.
func TestGroupCommitCycle(t *testing.T) {
	const cycle = 200 * time.Millisecond
	g, ran := startGroupCommit(t, cycle)

	offered := time.Now()
	offerJob(t, g, 1)
	first := nextBatch(t, ran)
	if !slices.Equal(first.jobs, []int{1}) || first.at.Sub(offered) > cycle/2 {
		t.Fatalf("first batch %v after %v, want [1] at once", first.jobs, first.at.Sub(offered))
	}

	offerJob(t, g, 2)
	time.Sleep(cycle / 10)
	offerJob(t, g, 3)
	second := nextBatch(t, ran)
	if !slices.Equal(second.jobs, []int{2, 3}) {
		t.Fatalf("second batch %v, want [2 3]: the jobs of the rest of the cycle in one batch", second.jobs)
	}
	if gap := second.at.Sub(first.at); gap < cycle {
		t.Fatalf("second batch started %v after the first, want at least the cycle %v", gap, cycle)
	}

	// A batch that reaches cycleFill starts at once, the rest of its cycle notwithstanding
	// (MaxBatch is larger: only the fill can end the wait early).
	for j := range cycleFill {
		offerJob(t, g, 100+j)
	}
	third := nextBatch(t, ran)
	if third.at.Sub(second.at) >= cycle || len(third.jobs) != cycleFill {
		t.Fatalf("a batch of %d started %v after the last, want %d at once", len(third.jobs), third.at.Sub(second.at), cycleFill)
	}

	time.Sleep(cycle + cycle/2)
	offered = time.Now()
	offerJob(t, g, 4)
	fourth := nextBatch(t, ran)
	if !slices.Equal(fourth.jobs, []int{4}) || fourth.at.Sub(offered) > cycle/2 {
		t.Fatalf("after an idle cycle, batch %v after %v, want [4] at once", fourth.jobs, fourth.at.Sub(offered))
	}
}

// TestGroupCommitNoCycle: without a cycle a batch starts as soon as its first job comes,
// however recently the last one started.
func TestGroupCommitNoCycle(t *testing.T) {
	g, ran := startGroupCommit(t, 0)
	for j := 1; j <= 3; j++ {
		offered := time.Now()
		offerJob(t, g, j)
		b := nextBatch(t, ran)
		if !slices.Equal(b.jobs, []int{j}) || b.at.Sub(offered) > 100*time.Millisecond {
			t.Fatalf("batch %v after %v, want [%d] at once", b.jobs, b.at.Sub(offered), j)
		}
	}
}
