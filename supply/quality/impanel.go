package quality

import (
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/engine"
	"github.com/switchboard/switchboard/internal/httpio"
	"github.com/switchboard/switchboard/persistence"
)

// impanelTimeout bounds the write of an impanel's profile rules, like the impanel's own.
const impanelTimeout = 10 * time.Second

// AfterImpanel applies the profile rules to an impanel that was stored, and notes the
// device sighting. Failures are logged: the impanel itself has succeeded.
func (q *Service) AfterImpanel(pub int64, user, device []byte, participantID int64, countryID int32, answers []persistence.ProfileAnswer) {
	if q == nil {
		return
	}
	q.Sight(pub, device, user, q.now())
	in := persistence.ImpanelQuality{ParticipantID: participantID, PublisherID: pub, CountryID: countryID}
	for _, a := range answers {
		if len(a.Codes) == 0 {
			continue
		}
		v := a.Codes[0]
		switch a.QuestionID {
		case engine.QuestionAge:
			in.Age = &v
		case engine.QuestionGender:
			in.Gender = &v
		}
	}
	ctx, cancel := httpio.DBContext(impanelTimeout)
	defer cancel()
	out, err := q.store.RecordImpanelQuality(ctx, q.cfg.Policy, in)
	if err != nil {
		q.log.Warn("impanel quality rules failed", zap.Int64("participant", participantID), zap.Error(err))
		return
	}
	q.Observe(out)
}
