package quality

import (
	"net/netip"
	"testing"
)

// TestPublicIPv4MatchesPrefixes checks the first-octet fast path against the generic rules.
func TestPublicIPv4MatchesPrefixes(t *testing.T) {
	for a := 0; a < 256; a++ {
		for _, b := range []int{0, 1, 2, 15, 16, 17, 18, 19, 31, 32, 51, 63, 64, 65, 100, 127, 128, 168, 254, 255} {
			for _, c := range []int{0, 1, 2, 100, 113, 255} {
				ip := netip.AddrFrom4([4]byte{byte(a), byte(b), byte(c), 7})
				for _, allow := range []bool{false, true} {
					if got, want := publicIPv4(ip.As4(), allow), publicByRules(ip, allow); got != want {
						t.Fatalf("%v allow=%v: fast %v, rules %v", ip, allow, got, want)
					}
				}
			}
		}
	}
}
