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
// table and the files it writes, then a tiny grid, and that bad flags are
// refused by name.
func TestSimulate(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := dispatch(context.Background(), []string{"simulate", "--seeds", "tuning:2", "--days", "2", "--campaigns", "20", "--arriving", "5",
		"--participants", "300", "--out", dir}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Means over 2 seeds", "| quotas filled by their deadline |", "balanced vs greedy", "edf vs greedy",
		"greedy+reroute2 vs greedy", "balanced+reroute2 vs greedy+reroute2", "| partner revenue per visit |", "| completes per 1,000 visits |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"simulate.md", "quotas.svg", "revenue.svg", "completes.svg"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || len(b) == 0 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
	out.Reset()
	err = dispatch(context.Background(), []string{"simulate", "--grid", "--policy", "edf", "--shapes", "balanced,supply-short", "--seeds", "1001,1002",
		"--days", "2", "--campaigns", "15", "--arriving", "5", "--participants", "300", "--out", dir}, &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"`switchboard simulate --grid --policy edf --shapes balanced,supply-short --seeds 1001,1002", "2 seeds per shape (1001–1002)",
		"| balanced |", "| supply-short |", "quotas filled vs greedy", "quotas filled vs balanced", "reroute 2 vs 0", "edf+reroute2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("grid output lacks %q:\n%s", want, out.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "grid.md")); err != nil || !bytes.Equal(b, out.Bytes()) {
		t.Errorf("grid.md: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seeds", "x"}, "--seeds"},
		{[]string{"--seeds", "1,y"}, "--seeds"},
		{[]string{"--seeds", "tuning:0"}, "--seeds"},
		{[]string{"--seeds", "evaluation:101"}, "--seeds"},
		{[]string{"--policies", "greedy,fair"}, "--policies"},
		{[]string{"--days", "-1"}, "--days"},
		{[]string{"--reroute", "0,6"}, "--reroute"},
		{[]string{"--reroute", "x"}, "--reroute"},
		{[]string{"--shape", "flat"}, "--shape"},
		{[]string{"--grid", "--shapes", "flat"}, "--shapes"},
		{[]string{"--grid", "--policy", "fair"}, "--policy"},
	} {
		err := dispatch(context.Background(), append([]string{"simulate"}, tc.args...), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one naming %s", tc.args, err, tc.want)
		}
	}
}
