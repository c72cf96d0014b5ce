package quality

import (
	"slices"
	"testing"

	policy "github.com/switchboard/switchboard/internal/quality"
)

func TestParseThresholds(t *testing.T) {
	th, err := ParseThresholds(" outcomes=3, speeding = -1,,duplicates=2")
	if err != nil || len(th) != 3 || th[policy.ClassOutcomes] != 3 || th[policy.ClassSpeeding] != -1 || th[policy.ClassDuplicates] != 2 {
		t.Fatalf("ParseThresholds = %v, %v", th, err)
	}
	for _, bad := range []string{"outcomes", "speed=3", "outcomes=0", "outcomes=x", "=1"} {
		if _, err := ParseThresholds(bad); err == nil {
			t.Errorf("ParseThresholds(%q) accepted", bad)
		}
	}
}

// FuzzParseThresholds: any text is refused or read as non-zero thresholds of rule classes.
func FuzzParseThresholds(f *testing.F) {
	for _, s := range []string{"outcomes=3,speeding=3,duplicates=1,implausible_profile=1", "speeding=-1", "", "x=1,,", "outcomes=3=4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		th, err := ParseThresholds(s)
		if err != nil {
			return
		}
		for k, v := range th {
			if !slices.Contains(policy.Classes, k) || v == 0 {
				t.Fatalf("%q read as %s=%d", s, k, v)
			}
		}
	})
}
