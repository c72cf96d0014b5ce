package main

import (
	"strings"
	"testing"
)

// TestAccessLogSampleFlag: serve refuses an --access-log-sample outside 0 to 1, naming the
// flag, before it opens anything.
func TestAccessLogSampleFlag(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"-0.1", "1.5", "NaN"} {
		_, stderr, err := run(t, "", nil, "serve", "--dev", "--addr", freeAddr(t), "--access-log-sample", v)
		if err == nil || !strings.Contains(stderr, "--access-log-sample must be between 0 and 1") {
			t.Errorf("--access-log-sample %s: %v\n%s", v, err, stderr)
		}
	}
}
