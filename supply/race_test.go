//go:build race

package supply

const raceEnabled = true
