package engine_test

import (
	"testing"

	"github.com/switchboard/switchboard/engine"
)

func TestNormalizeText(t *testing.T) {
	for in, want := range map[string]string{
		"94105": "94105", " sw1a 1aa ": "SW1A1AA", "k1a\t0b1": "K1A0B1", "": "",
		"é a": "ÉA",
	} {
		if got := engine.NormalizeText(in); got != want {
			t.Errorf("NormalizeText(%q) = %q, want %q", in, got, want)
		}
	}
	if allocs := testing.AllocsPerRun(100, func() { engine.NormalizeText("SW1A1AA") }); allocs != 0 {
		t.Errorf("normalized input allocates %v", allocs)
	}
}

func TestHashDeviceID(t *testing.T) {
	// SHA-1 of "ABC" is 3C01BDBB26F358BAB27F267924AA2C9A03FCFDB8.
	if got := engine.HashDeviceID("abc"); got != "3C01BDBB26F358BAB27F267924AA2C9A03FCFDB8" {
		t.Fatalf("HashDeviceID = %s", got)
	}
	if engine.HashDeviceID("") != "" {
		t.Fatal("empty id must hash to empty")
	}
}

func TestDeviceCodes(t *testing.T) {
	if got := engine.DevicesFromCodes([]int{1, 2}); got != engine.DeviceMobile|engine.DeviceDesktop {
		t.Fatalf("DevicesFromCodes = %b", got)
	}
	if engine.DevicesFromCodes(nil) != 0 {
		t.Fatal("empty list must mean all (0)")
	}
	for typ, want := range map[int]uint8{1: engine.DeviceMobile, 2: engine.DeviceDesktop, 3: engine.DeviceTablet, 4: 0} {
		if got := engine.DeviceFromSupply(typ); got != want {
			t.Errorf("DeviceFromSupply(%d) = %b", typ, got)
		}
	}
}
