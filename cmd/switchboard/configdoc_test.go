package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

var updateConfigDoc = flag.Bool("update", false, "rewrite docs/configuration.md from the commands' flags")

const configDocPath = "../../docs/configuration.md"

// configurationReference renders every flag of every command (its variable, default and
// meaning), collected by running each command with -h: the flags are the ones the code
// registers, so the page cannot drift from them.
func configurationReference(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`# Configuration reference

Generated from the flags of every ` + "`switchboard`" + ` command by
` + "`go test ./cmd/switchboard -run TestConfigurationReference -update`" + `; the test fails when
this page and the code differ. Do not edit by hand.

Every flag can also be set by an environment variable: ` + "`--database-url`" + ` reads
` + "`DATABASE_URL`" + `, any other ` + "`--name`" + ` reads ` + "`SWITCHBOARD_NAME`" + ` (dashes become
underscores). A flag given on the command line wins over its variable. Booleans take ` + "`true`" + `
or ` + "`false`" + ` in a variable. Besides the flags:

| Variable | Meaning |
|---|---|
| ` + "`SWITCHBOARD_LOG_LEVEL`" + ` | log level: ` + "`debug`, `info` (default), `warn`, `error`" + `. Logs are JSON, or a console format when stderr is a terminal |
| ` + "`GOMEMLIMIT`" + ` | the Go runtime's soft memory limit; wins over ` + "`serve --memory-limit`" + ` (docs/operations.md, "Memory limit") |

`)
	for _, c := range commands() {
		var made []*flag.FlagSet
		flagSetMade = func(fs *flag.FlagSet) {
			fs.SetOutput(io.Discard)
			made = append(made, fs)
		}
		err := dispatch(context.Background(), append(strings.Fields(c.name), "-h"), io.Discard)
		flagSetMade = nil
		if !errors.Is(err, flag.ErrHelp) || len(made) != 1 {
			t.Fatalf("%s -h: %v with %d flag sets; want flag.ErrHelp from one (parse flags before doing anything)", c.name, err, len(made))
		}
		fmt.Fprintf(&b, "## `switchboard %s`\n\n%s.\n\n", c.name, capitalize(c.usage))
		n := 0
		made[0].VisitAll(func(*flag.Flag) { n++ })
		if n == 0 {
			b.WriteString("No flags.\n\n")
			continue
		}
		b.WriteString("| Flag | Variable | Default | Meaning |\n|---|---|---|---|\n")
		made[0].VisitAll(func(fl *flag.Flag) {
			kind, usage := flag.UnquoteUsage(fl)
			name := "`--" + fl.Name + "`"
			if kind != "" {
				name = "`--" + fl.Name + " " + kind + "`"
			}
			def := "`" + fl.DefValue + "`"
			if fl.DefValue == "" {
				def = "none"
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", name, envName(fl.Name), def, strings.NewReplacer("|", `\|`, "\n", " ").Replace(usage))
		})
		b.WriteString("\n")
	}
	return b.String()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// TestConfigurationReference: docs/configuration.md is what the flags say; -update rewrites
// it.
func TestConfigurationReference(t *testing.T) {
	want := configurationReference(t)
	if *updateConfigDoc {
		if err := os.WriteFile(configDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/switchboard -run TestConfigurationReference -update)", err)
	}
	if string(got) != want {
		t.Errorf("docs/configuration.md differs from the flags: run go test ./cmd/switchboard -run TestConfigurationReference -update\n%s",
			firstDifference(string(got), want))
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  doc:   %s\n  flags: %s", i+1, gl, wl)
		}
	}
	return ""
}
