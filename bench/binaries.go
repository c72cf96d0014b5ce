package bench

import "context"

// BinaryRound is one round of the paired comparison of this binary with a baseline one
// (Options.CompareBinary): the offers closed loop against a serve child of each on the same
// market, one after the other, so that a change of the machine's load between rounds moves
// both. It is how a change's effect on the offers path is measured on a noisy machine,
// where separate runs differ by more than the change.
type BinaryRound struct {
	Baseline, This *Phase
}

// Ratio is this binary's offers throughput over the baseline's in the round.
func (b BinaryRound) Ratio() float64 { return pairRatio(b.pair(), (*Phase).throughput) }

// CPURatio is this binary's server CPU per request over the baseline's in the round.
func (b BinaryRound) CPURatio() float64 { return pairRatio(b.pair(), (*Phase).CPUPer1k) }

func (b BinaryRound) pair() [2]*Phase { return [2]*Phase{b.Baseline, b.This} }

// BinaryRatios are the medians over the rounds of the throughput and CPU ratios (this /
// baseline; 0 when no round ran).
func (r *Report) BinaryRatios() (throughput, cpu float64) { return pairMedians(r.Binaries) }

// compareBinary starts a serve child of o.CompareBinary (the baseline) and one of this
// binary on the seeded database, both with o's serve options, and runs the offers closed
// loop against them in o.CompareRounds rounds (pairedOffers). The baseline must accept the
// database's schema and serve's flags as this binary passes them.
func compareBinary(ctx context.Context, o Options, rep *Report, m *Market, dbURL, tmp string, pgPID int) error {
	opts := [2]Options{o, o}
	opts[0].Binary = o.CompareBinary
	return pairedOffers(ctx, o, [2]string{"baseline", "this"}, opts, o.CompareRounds, m, dbURL, tmp, pgPID, func(round [2]*Phase) {
		rep.Binaries = append(rep.Binaries, BinaryRound{Baseline: round[0], This: round[1]})
	})
}
