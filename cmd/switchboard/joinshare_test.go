package main

import (
	"strings"
	"testing"
)

// TestJoinLoadShareFlag: serve refuses a --join-load-share outside (0, 1], naming the flag,
// before it opens anything.
func TestJoinLoadShareFlag(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0", "-0.1", "1.5", "NaN"} {
		_, stderr, err := run(t, "", nil, "serve", "--dev", "--addr", freeAddr(t), "--join-load-share", v)
		if err == nil || !strings.Contains(stderr, "--join-load-share must be above 0 and at most 1") {
			t.Errorf("--join-load-share %s: %v\n%s", v, err, stderr)
		}
	}
}
