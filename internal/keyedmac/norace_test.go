//go:build !race

package keyedmac_test

const raceEnabled = false
