package supply

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// appendEPC must write exactly what the shortest float formatting of the rounded epc writes.
func epcReference(epc float64) string {
	return strconv.FormatFloat(math.Round(epc*1e4)/1e4, 'f', -1, 64)
}

func TestAppendEPC(t *testing.T) {
	cases := []float64{0, 1, 1.2, 1.2345, 1.23456, 0.00005, 0.00004, 0.0005, 0.1, 10.01, 123.4500, 2.99995,
		-0.5, -1.23456, math.Copysign(0, -1), -0.00004, 1e12, 9e14, 1e300, math.Inf(1), math.Inf(-1), math.NaN()}
	r := rand.New(rand.NewPCG(8, 2))
	for range 200_000 {
		cases = append(cases, r.Float64()*5, float64(r.IntN(100_000))/1e4, r.ExpFloat64()*100)
	}
	for _, epc := range cases {
		if got, want := string(appendEPC(nil, epc)), epcReference(epc); got != want {
			t.Fatalf("appendEPC(%v) = %q, want %q", epc, got, want)
		}
	}
}
