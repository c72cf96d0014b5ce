//go:build race

package engine_test

// raceEnabled: sync.Pool drops items at random under the race detector, so allocation
// counts are not meaningful there.
const raceEnabled = true
