package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulate runs `switchboard simulate` on a tiny market and checks the
// table and the files it writes, and that bad flags are refused by name.
func TestSimulate(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := dispatch(context.Background(), []string{"simulate", "--seeds", "2", "--days", "2", "--campaigns", "20",
		"--participants", "100", "--scale", "100", "--out", dir}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Medians over 2 seeds (1, 2)", "| quotas filled by deadline |", "balanced vs greedy", "| 2 | balanced |",
		"greedy+reroute2 vs greedy", "balanced+reroute2 vs greedy+reroute2", "| entered and left with nothing, per 1,000 visits |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"simulate.md", "fill.svg", "quotas-full.svg", "terminations.svg", "quotas.svg", "completes.svg", "left-empty.svg"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || len(b) == 0 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seeds", "x"}, "--seeds"},
		{[]string{"--seeds", "1,y"}, "--seeds"},
		{[]string{"--policies", "greedy,fair"}, "--policies"},
		{[]string{"--days", "0"}, "--days"},
		{[]string{"--reroute", "0,6"}, "--reroute"},
		{[]string{"--reroute", "x"}, "--reroute"},
	} {
		err := dispatch(context.Background(), append([]string{"simulate"}, tc.args...), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}
