package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/switchboard/switchboard/cmd/switchboard/app"
	"github.com/switchboard/switchboard/cmd/switchboard/app/apptest"
	"github.com/switchboard/switchboard/persistence/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(runAsSwitchboard) != "" { // a child started by process (process_test.go)
		main()
		os.Exit(0)
	}
	pgtest.Main(m)
}

// walkthrough returns the shell block between the README's walkthrough markers.
func walkthrough(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- walkthrough:start -->")
	block, _, ok2 := strings.Cut(rest, "<!-- walkthrough:end -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no walkthrough markers")
	}
	block = strings.TrimSpace(block)
	block = strings.TrimPrefix(block, "```sh")
	return strings.TrimSuffix(block, "```")
}

// The README's walk-through, pasted into a shell against a server seeded with the demo data,
// must work as written.
func TestReadmeWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	t.Parallel()
	s := apptest.Start(t, apptest.Options{Configure: func(c *app.Config) { c.DemoPartner = demoPartner() }}) // as serve --demo
	if _, err := seedDemo(context.Background(), s.DB, app.Config{PublicURL: s.PublicURL}, false); err != nil {
		t.Fatal(err)
	}
	if err := s.App.Supply.ReloadPublishers(context.Background()); err != nil { // as serve --demo does
		t.Fatal(err)
	}
	script := walkthrough(t)
	if !strings.Contains(script, "BASE=http://127.0.0.1:8080") {
		t.Fatal("walk-through no longer sets BASE=http://127.0.0.1:8080")
	}
	script = strings.Replace(script, "BASE=http://127.0.0.1:8080", "BASE="+s.URL, 1)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("walk-through failed: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{`"abbr":"en-US"`, "campaign ", `"name":"Women 25-34"`, `"status":2`, `"num_respondents":200`, `"surveys":[{"identifier":`,
		"back to the partner: " + s.PublicURL + "/demo/partner/return?tid=", `<dd id="status">complete</dd>`, `<strong id="sech">valid</strong>`} {
		if !strings.Contains(text, want) {
			t.Errorf("walk-through output lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "campaign \n") {
		t.Errorf("walk-through could not read the new campaign's id:\n%s", text)
	}
}
