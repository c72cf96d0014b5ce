package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeBuildStamps: `make build` stamps the revision into the binary even where
// GOFLAGS=-buildvcs=false keeps Go from stamping it, so that `switchboard version` names the
// code it runs instead of "(devel)" and "revision unknown".
func TestMakeBuildStamps(t *testing.T) {
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	const root = "../.."
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	rev := strings.TrimSpace(string(head))
	bin := filepath.Join(t.TempDir(), "switchboard")
	build := exec.Command("make", "-C", root, "build", "BIN="+bin)
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("switchboard version: %v", err)
	}
	text := string(out)
	if !regexp.MustCompile(`(?m)^revision ` + rev + `( \(modified\))?$`).MatchString(text) {
		t.Errorf("version does not name revision %s:\n%s", rev, text)
	}
	if !regexp.MustCompile(`(?m)^version  v0\.0\.0-\d{14}-` + rev[:12] + `(\+dirty)?$`).MatchString(text) {
		t.Errorf("version is not the pseudo-version of %s:\n%s", rev[:12], text)
	}
	if !regexp.MustCompile(`(?m)^time     \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(text) {
		t.Errorf("version has no commit time:\n%s", text)
	}
}
