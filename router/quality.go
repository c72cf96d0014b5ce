package router

import (
	"context"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/switchboard/switchboard/internal/entrytoken"
	"github.com/switchboard/switchboard/internal/outcome"
	"github.com/switchboard/switchboard/internal/quality"
	"github.com/switchboard/switchboard/persistence"
	"github.com/switchboard/switchboard/router/payout"
)

// QualityGate is what routing needs of participant quality; quality.Service (supply/quality)
// implements it (docs/quality.md). Every method must be cheap on the entry path:
// EntryBlocked reads memory.
type QualityGate interface {
	// EntryBlocked reports whether an offer token issued at issuedAt may not be used now.
	EntryBlocked(participantID, issuedAt, now int64) bool
	// Record stores signals, decides blocks and applies them in this process.
	Record(ctx context.Context, sigs []persistence.QualitySignal) error
	// Policy is the decision policy, for signals recorded inside another transaction.
	Policy() quality.Policy
	// Observe counts and applies what signals recorded elsewhere decided.
	Observe(out persistence.QualityOutcome)
}

// QualityConfig tunes the routing side of quality.
type QualityConfig struct {
	// SpeederFraction: a complete whose callback arrives sooner than this fraction of the
	// campaign's length_of_interview after entry is a speeder (default 0.25; negative: off).
	SpeederFraction float64
}

type qualityHooks struct {
	gate            QualityGate
	speederFraction float64
}

// qualitySignalTimeout bounds the write of a callback's quality signal.
const qualitySignalTimeout = 5 * time.Second

// SetQuality turns the quality checks of entry and callbacks on (before Start).
func (r *Router) SetQuality(g QualityGate, cfg QualityConfig) {
	if cfg.SpeederFraction == 0 {
		cfg.SpeederFraction = 0.25
	}
	r.quality = qualityHooks{gate: g, speederFraction: cfg.SpeederFraction}
}

// qualityRefusal returns the partner redirect for an offer token that may not be used because
// its participant is blocked for quality (or was blocked after the token was issued):
// status=quality_term, reward 0, signed, no tid. "" lets the entry proceed.
func (r *Router) qualityRefusal(claims *entrytoken.Claims, pub persistence.Publisher, now time.Time) string {
	if r.quality.gate == nil || !r.quality.gate.EntryBlocked(claims.ParticipantID, claims.Expires-entrytoken.TTL, now.Unix()) {
		return ""
	}
	return payout.RedirectURL(pub, payout.Fields{Status: outcome.QualityTerm})
}

// IsSpeeder reports whether a complete that took elapsed is a speeder: faster than fraction
// of the campaign's length of interview (minutes).
func IsSpeeder(elapsed time.Duration, loiMinutes int, fraction float64) bool {
	if fraction <= 0 || loiMinutes <= 0 {
		return false
	}
	limit := time.Duration(math.Round(float64(loiMinutes) * fraction * float64(time.Minute)))
	return elapsed < limit
}

// afterOutcome records the quality signal of a newly decided outcome: a quality_term, or a
// speeding complete. It never fails the callback: an error is logged.
func (r *Router) afterOutcome(ctx context.Context, s persistence.Session, decided string, now time.Time) {
	g := r.quality.gate
	if g == nil || s.ParticipantID == 0 || s.IsTest {
		return
	}
	var sig persistence.QualitySignal
	switch {
	case decided == outcome.QualityTerm:
		sig = persistence.QualitySignal{Kind: quality.SignalQualityTerm}
	case decided == outcome.Complete && IsSpeeder(now.Sub(s.EnteredAt), s.LOI, r.quality.speederFraction):
		sig = persistence.QualitySignal{Kind: quality.SignalSpeeder, Evidence: map[string]any{
			"campaign_id": s.CampaignID, "seconds": math.Round(now.Sub(s.EnteredAt).Seconds()*10) / 10,
			"length_of_interview_minutes": s.LOI}}
	default:
		return
	}
	sig.ParticipantID, sig.PublisherID, sig.Ref, sig.TID = s.ParticipantID, s.PublisherID, s.TID, s.TID
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), qualitySignalTimeout)
	defer cancel()
	if err := g.Record(c, []persistence.QualitySignal{sig}); err != nil {
		r.log.Warn("quality signal not recorded", zap.String("kind", sig.Kind), zap.String("tid", s.TID), zap.Error(err))
	}
}
