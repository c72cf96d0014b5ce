package router

import (
	"context"
	"time"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/persistence"
)

// sessionStore is what the router writes and reads of sessions: admissions, outcomes,
// re-routing chains, test sessions and pre-screener sheets.
type sessionStore interface {
	Admit(ctx context.Context, e persistence.Entry) (persistence.Admission, error)
	NewEntryWriter(cfg persistence.EntryWriterConfig) *persistence.EntryWriter
	OfferSession(ctx context.Context, participantID, campaignID, nonce int64) (persistence.Admission, bool, error)
	SessionByTID(ctx context.Context, tid string) (persistence.Session, error)
	NewSessionReader(workers int) *persistence.SessionReader
	RecordOutcome(ctx context.Context, s persistence.Session, o persistence.OutcomeRecord) (persistence.OutcomeResult, error)
	NewOutcomeWriter(cfg persistence.EntryWriterConfig) *persistence.OutcomeWriter
	ChainByID(ctx context.Context, id int64) (persistence.Chain, error)
	ChainHopByNumber(ctx context.Context, id int64, hop int) (h persistence.ChainHop, found bool, err error)
	ContinueChain(ctx context.Context, st persistence.ChainStep) (persistence.ChainStepResult, error)
	StartTestSession(ctx context.Context, tid string, campaignID int64) (time.Time, error)
	RecordPrescreen(ctx context.Context, r persistence.PrescreenResponse) (int64, error)
}

// sessionIO admits entries, loads callbacks' sessions and records their outcomes: through
// the group-commit writers and the coalescing reader, or, when naive, one transaction each.
type sessionIO struct {
	sessions sessionStore
	// userOf finds a session's participant's user identifier: users (the panel, which holds
	// every participant active in the last 30 days), else the database.
	userOf participantStore
	users  *engine.Panel
	writer *persistence.EntryWriter
	outw   *persistence.OutcomeWriter
	reader *persistence.SessionReader
}

func newSessionIO(sessions sessionStore, userOf participantStore, users *engine.Panel, cfg Config) sessionIO {
	s := sessionIO{sessions: sessions, userOf: userOf, users: users}
	if !cfg.Naive {
		entries := cfg.GroupCommit
		if cfg.EntryWorkers > 0 {
			entries.Workers = cfg.EntryWorkers
		}
		s.writer = sessions.NewEntryWriter(entries)
		s.outw = sessions.NewOutcomeWriter(cfg.GroupCommit)
		s.reader = sessions.NewSessionReader(1)
	}
	return s
}

// close stops the group-commit writers (after their queued work) and the reader.
func (s *sessionIO) close() {
	if s.writer != nil {
		s.writer.Close()
		s.outw.Close()
		s.reader.Close()
	}
}

// admit decides an entry through the group-commit writer or, when naive, alone.
func (s *sessionIO) admit(ctx context.Context, e persistence.Entry) (persistence.Admission, error) {
	if s.writer != nil {
		return s.writer.Admit(ctx, e)
	}
	return s.sessions.Admit(ctx, e)
}

// session loads a callback's session through the coalescing reader or, when naive, alone.
// The reader leaves the participant's user identifier to this process's panel, which holds
// every participant active in the last 30 days; the database is asked for one it does not.
func (s *sessionIO) session(ctx context.Context, tid string) (persistence.Session, error) {
	if s.reader == nil {
		return s.sessions.SessionByTID(ctx, tid)
	}
	ss, err := s.reader.ByTID(ctx, tid)
	if err != nil || ss.ParticipantID == 0 {
		return ss, err
	}
	if pub, user, ok := s.users.UserOf(ss.ParticipantID); ok && pub == ss.PublisherID {
		ss.UserIdentifier = user
		return ss, nil
	}
	ss.UserIdentifier, err = s.userOf.ParticipantUser(ctx, ss.ParticipantID)
	return ss, err
}

// record stores a callback's outcome through the group-commit writer or, when naive, alone.
func (s *sessionIO) record(ctx context.Context, ss persistence.Session, o persistence.OutcomeRecord) (persistence.OutcomeResult, error) {
	if s.outw != nil {
		return s.outw.Record(ctx, ss, o)
	}
	return s.sessions.RecordOutcome(ctx, ss, o)
}
