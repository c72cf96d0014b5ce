// Package marketsim plays a synthetic market forward in time through the
// real engine and its real allocation code, on a virtual clock, so that
// allocation policies can be compared on what they deliver: quotas filled by
// their deadline, partner revenue and completes per visit, and how fast a
// new campaign's true conversion is learned. It is a model, not a forecast;
// every assumption of the generator is a field of Config, and Shapes names
// the grid of markets the evaluation runs (docs/allocation.md, "Evaluation").
//
// The market: campaigns in field at the start and campaigns arriving during
// the run, each leaving at the end of its field period; a panel whose
// members visit at their own daily rates in each partner's daily wave; a
// participant's chance to complete a campaign that depends on its profile
// (a hidden screener question per campaign) and on its own quality; offers
// chosen by position and length of interview; sessions that take time
// (screen-outs early, completes after about the LOI) and are abandoned more
// often the longer the interview, an abandoned session holding its place in
// the quotas until the engine's timeout (2 × LOI + 10 minutes).
package marketsim
