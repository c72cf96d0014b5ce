//go:build !race

package supply

const raceEnabled = false
