package persistence

import (
	"context"
	"sync"
	"time"

	"github.com/switchboard/switchboard/internal/fault"
)

// EntryWriter admits entries by group commit: concurrent entries are collected into one
// batch that admitBatch decides in one transaction with one COMMIT (one WAL flush). Each
// entry is still decided by the same rules against the counts left by the entries before
// it, so batching changes durability cost, never the verdicts.
type EntryWriter struct {
	db *SessionStore
	gc groupCommit[*entryJob]
}

type entryJob struct {
	e    Entry
	a    Admission
	err  error
	done jobDone
}

// entryJobs keeps entry jobs for the next entries.
var entryJobs = sync.Pool{New: func() any { return &entryJob{done: newJobDone()} }}

// release gives j back to entryJobs, holding nothing of its entry.
func (j *entryJob) release() {
	j.e, j.a, j.err = Entry{}, Admission{}, nil
	entryJobs.Put(j)
}

// EntryWriterConfig tunes an EntryWriter.
type EntryWriterConfig struct {
	// Workers is how many batches are in flight at once (default 1). On a small machine
	// one worker's larger batches cost PostgreSQL less per entry than several smaller ones
	// in parallel (docs/performance.md); more cores may want more. Entries of one campaign
	// always go to the same worker (see groupCommit).
	Workers  int
	MaxBatch int // entries per batch at most (default 128)
	// Cycle is the least time between the starts of a worker's batches of fewer than eight
	// jobs (default 0: a batch starts as soon as the one before it commits). Each
	// transaction costs PostgreSQL about as much as several entries, whatever its size: at
	// moderate rates, when a commit takes less than the cycle, waiting out the rest of it
	// for company costs the entries a few milliseconds and PostgreSQL much less per entry
	// (docs/performance.md, "A commit cycle"); at high rates commits take longer than the
	// cycle, or batches of eight queue within it, and nothing waits.
	Cycle time.Duration
}

// NewEntryWriter starts the writer's workers; Close stops them.
func (db *SessionStore) NewEntryWriter(cfg EntryWriterConfig) *EntryWriter {
	w := &EntryWriter{db: db}
	w.gc.start(cfg, w.run)
	return w
}

// Close stops the workers once the queued entries are written.
func (w *EntryWriter) Close() { w.gc.close() }

// Admit queues e and waits for its verdict, durably committed when admitted.
func (w *EntryWriter) Admit(ctx context.Context, e Entry) (Admission, error) {
	j := entryJobs.Get().(*entryJob)
	j.e = e
	if err := w.gc.offer(uint64(e.CampaignID), j, ctx.Done(), ctx.Err); err != nil {
		j.release()
		return Admission{}, err
	}
	// The job is in the queue: its fate is decided by a batch; wait for it even if ctx ends,
	// so that a committed admission is never reported as a failure.
	j.done.wait()
	a, err := j.a, j.err
	j.release()
	if err != nil {
		return Admission{}, err
	}
	return w.db.fillRespondent(context.WithoutCancel(ctx), a)
}

// run commits one batch, retrying it whole after a deadlock or serialization failure; any
// other failure is retried entry by entry so that one bad entry cannot fail its neighbours.
func (w *EntryWriter) run(batch []*entryJob) {
	// Entries are decided in arrival order; admitBatch locks quota rows in id order, so
	// concurrent batches (on any process) do not deadlock each other.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := retry(ctx, func() error { return w.runOnce(ctx, batch) })
	if err == nil {
		for _, j := range batch {
			j.done.signal()
		}
		return
	}
	if len(batch) > 1 && !isUnavailable(err) {
		for _, j := range batch {
			w.run([]*entryJob{j})
		}
		return
	}
	for _, j := range batch {
		j.err = classify(err)
		j.done.signal()
	}
}

func (w *EntryWriter) runOnce(ctx context.Context, batch []*entryJob) error {
	s := admitScratches.Get().(*admitScratch)
	defer s.release()
	for _, j := range batch {
		s.es = append(s.es, j.e)
	}
	// One transaction: all admitted or none.
	if err := w.db.admitBatch(ctx, s.es, s); err != nil {
		return err
	}
	for i, j := range batch {
		j.a = s.out[i]
	}
	return nil
}

func isUnavailable(err error) bool {
	return fault.KindOf(classify(err)) == fault.KindUnavailable
}
