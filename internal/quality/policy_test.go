package quality

import "testing"

func TestDecide(t *testing.T) {
	def := Policy{}.WithDefaults()
	off := Policy{Thresholds: map[string]int{ClassDuplicates: -1}}.WithDefaults()
	for _, tc := range []struct {
		name   string
		pol    Policy
		counts map[string]int
		want   string
	}{
		{"nothing", def, nil, ""},
		{"below every threshold", def, map[string]int{ClassOutcomes: 2, ClassSpeeding: 2}, ""},
		{"outcomes at 3", def, map[string]int{ClassOutcomes: 3}, ClassOutcomes},
		{"one duplicate", def, map[string]int{ClassDuplicates: 1}, ClassDuplicates},
		{"duplicates before speeding", def, map[string]int{ClassSpeeding: 5, ClassDuplicates: 1}, ClassDuplicates},
		{"implausible before outcomes", def, map[string]int{ClassOutcomes: 9, ClassImplausible: 1}, ClassImplausible},
		{"a class turned off", off, map[string]int{ClassDuplicates: 4}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pol.Decide(tc.counts); got != tc.want {
				t.Fatalf("Decide(%v) = %q, want %q", tc.counts, got, tc.want)
			}
		})
	}
}

func TestSignalClass(t *testing.T) {
	for kind, want := range map[string]string{
		SignalQualityTerm: ClassOutcomes, SignalRejected: ClassOutcomes, SignalSpeeder: ClassSpeeding,
		SignalSharedDevice: ClassDuplicates, SignalMultiCountry: ClassDuplicates,
		SignalImplausibleAge: ClassImplausible, SignalImplausibleGender: ClassImplausible,
	} {
		if got := SignalClass(kind); got != want {
			t.Errorf("SignalClass(%q) = %q, want %q", kind, got, want)
		}
	}
}
