package main

import (
	"strings"
	"testing"
)

// TestCommitCycleFlag: serve refuses a negative --commit-cycle, naming the flag, before it
// opens anything.
func TestCommitCycleFlag(t *testing.T) {
	t.Parallel()
	_, stderr, err := run(t, "", nil, "serve", "--dev", "--addr", freeAddr(t), "--commit-cycle", "-1ms")
	if err == nil || !strings.Contains(stderr, "--commit-cycle must not be negative") {
		t.Errorf("--commit-cycle -1ms: %v\n%s", err, stderr)
	}
}
