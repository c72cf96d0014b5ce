//go:build !race

package entrytoken

const raceEnabled = false
