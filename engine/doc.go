// Package engine decides which campaigns a participant may enter and in what
// order they are offered.
//
// The engine keeps an immutable Snapshot of every active campaign behind an
// atomic pointer. A snapshot is partitioned by country; each partition keeps
// its campaigns' quotas and conditions compiled into flat arrays (code masks,
// plus postings from text answers to conditions) and walks campaigns in
// descending order of an upper bound of their score, stopping once the k best
// are found (see partition). The score is the EPC under the greedy allocation
// policy, or the EPC times a weight computed off the request path (scarcity,
// pacing, exploration) under the balanced one (see Allocation and
// docs/allocation.md).
// Live counters (completes, sessions in progress, entries, daily completes,
// outcome statistics) sit beside the snapshot in atomics, so a count never
// forces a rebuild. Matching is a pure function of (snapshot, counters,
// participant, now) and allocates nothing in steady state.
//
// The package uses only the standard library and knows nothing of HTTP or
// SQL: persistence hands campaigns in as plain structs (Campaign) and the
// supply interface hands participants in as Participant values.
package engine
