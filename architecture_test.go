// Package switchboard holds the repository-wide tests: the import rules between the
// project's packages (docs/architecture.md, "Packages"), the documents the code cites, and that
// no handler hands its *fasthttp.RequestCtx over as a context.Context (requestctx_test.go).
package switchboard

import (
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// importEdge is one import of a module package by a module package, as written in one file.
type importEdge struct {
	from, to string // paths relative to the module root, "engine", "internal/fault", ...
	file     string // the importing file, relative to the module root
	test     bool   // the importing file is a _test.go file
}

// update rewrites the import graph in docs/architecture.md from the tree.
var update = flag.Bool("update", false, "rewrite the import graph in docs/architecture.md")

// graphHeading introduces the fenced block of docs/architecture.md that lists the graph.
const graphHeading = "The current graph (non-test imports of our own packages):\n\n```\n"

// handlers are the HTTP interfaces: they import services, the engine, persistence and the
// shared kit, never one another.
var handlers = []string{"admin", "supply", "router"}

// under reports whether pkg is dir or a package below it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// handlerOf names the handler package pkg is, or "" when it is none: a handler's
// subpackage (router/payout, supply/quality, ...) is a service, not the handler.
func handlerOf(pkg string) string {
	for _, h := range handlers {
		if pkg == h {
			return h
		}
	}
	return ""
}

// serviceOf reports whether pkg is a service: a package under a handler's directory that
// holds one concept (payouts, quality, ...) for every handler that needs it.
func serviceOf(pkg string) bool {
	for _, h := range handlers {
		if strings.HasPrefix(pkg, h+"/") {
			return true
		}
	}
	return false
}

// importViolation says why the import e is forbidden, or "" when it is allowed.
func importViolation(e importEdge) string {
	from, to := e.from, e.to
	switch {
	case under(from, "engine") && !under(to, "engine"):
		return "engine is pure Go and imports no other package of ours"
	case under(from, "persistence") && (handlerOf(to) != "" || under(to, "cmd") || under(to, "bench")):
		return "persistence imports no handler, cmd or bench package"
	case handlerOf(from) != "" && handlerOf(to) != "" && handlerOf(from) != handlerOf(to):
		return "handlers (admin, supply, router) never import one another"
	case serviceOf(from) && handlerOf(to) != "":
		return "a service imports no handler; handlers import services"
	case under(from, "persistence") && serviceOf(to):
		return "persistence imports no service: services build on persistence"
	case under(from, "internal") && (handlerOf(to) != "" || serviceOf(to) || under(to, "cmd")):
		return "the shared kit (internal/...) imports no handler, service or cmd package"
	case under(from, "internal") && !e.test && !under(to, "internal"):
		return "the shared kit (internal/...) imports nothing of ours outside internal/"
	case under(from, "bench") && (handlerOf(to) != "" || under(to, "cmd")):
		return "bench imports no handler or cmd package (handler tests drive load with it)"
	case !e.test && !under(from, "cmd") && under(to, "cmd"):
		return "only cmd/switchboard wires the packages together; tests may use its apptest harness"
	}
	return ""
}

// moduleImports parses every Go file of the module under root (imports only) and returns
// each import of a module package.
func moduleImports(t *testing.T, root string) []importEdge {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var modPath string
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			modPath = f[1]
		}
	}
	if modPath == "" {
		t.Fatal("go.mod names no module")
	}
	var edges []importEdge
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "vendor" || name == "bin" || name == "test-artifacts") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		from := filepath.ToSlash(filepath.Dir(rel))
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if !under(p, modPath) || p == modPath {
				continue
			}
			edges = append(edges, importEdge{
				from: from, to: strings.TrimPrefix(p, modPath+"/"),
				file: rel, test: strings.HasSuffix(name, "_test.go"),
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return edges
}

// TestImportRules fails when a package imports one of ours that the layering forbids:
// engine → anything of ours outside engine, persistence → a handler or a service, handler →
// handler, service → handler, shared kit → anything of ours outside internal/ (a handler, a
// service or cmd even in tests), anything but cmd → cmd (outside tests).
func TestImportRules(t *testing.T) {
	edges := moduleImports(t, ".")
	if len(edges) < 20 {
		t.Fatalf("found only %d imports of module packages: is the walk broken?", len(edges))
	}
	graph := map[string]map[string]bool{}
	for _, e := range edges {
		if why := importViolation(e); why != "" {
			t.Errorf("%s imports %s: %s", e.file, e.to, why)
		}
		if !e.test && e.from != e.to {
			if graph[e.from] == nil {
				graph[e.from] = map[string]bool{}
			}
			graph[e.from][e.to] = true
		}
	}
	var pkgs []string
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	var b strings.Builder
	for _, p := range pkgs {
		var to []string
		for q := range graph[p] {
			to = append(to, q)
		}
		sort.Strings(to)
		fmt.Fprintf(&b, "%-26s → %s\n", p, strings.Join(to, ", "))
	}
	checkGraphDoc(t, "docs/architecture.md", b.String())
}

// checkGraphDoc compares the graph block of the architecture document with the tree's, so
// the document cannot drift from the code (go test -run TestImportRules . -update rewrites it).
func checkGraphDoc(t *testing.T, path, graph string) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, graphHeading)
	if i < 0 {
		t.Fatalf("%s has no block introduced by %q", path, graphHeading)
	}
	start := i + len(graphHeading)
	end := strings.Index(text[start:], "```")
	if end < 0 {
		t.Fatalf("%s: the graph block is not closed", path)
	}
	if text[start:start+end] == graph {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(text[:start]+graph+text[start+end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the import graph differs from the tree; run go test -run TestImportRules . -update\nwant:\n%s", path, graph)
}

// TestImportViolation checks the rules themselves on imports that must and must not pass.
func TestImportViolation(t *testing.T) {
	for _, tc := range []struct {
		from, to  string
		test, bad bool
	}{
		{"engine", "internal/fault", false, true},
		{"engine", "persistence", false, true},
		{"engine/synth", "engine", false, false},
		{"engine", "engine/synth", true, false},
		{"persistence", "engine", false, false},
		{"persistence", "internal/fault", false, false},
		{"persistence", "router", false, true},
		{"persistence/pgtest", "admin", true, true},
		{"admin", "supply", false, true},
		{"router", "admin", true, true},
		{"supply", "router", false, true},
		{"router", "router", true, false},
		{"router", "router/payout", false, false},
		{"supply", "router/payout", false, false},
		{"router", "bench", true, false},
		{"router/payout", "persistence", false, false},
		{"router/payout", "internal/fault", false, false},
		{"router/payout", "router", false, true},
		{"supply/quality", "supply", true, true},
		{"router/payout", "supply/quality", false, false},
		{"persistence", "router/payout", false, true},
		{"persistence", "router/payout", true, true},
		{"internal/httpio", "supply", false, true},
		{"internal/mirror", "router/payout", true, true},
		{"internal/mirror", "internal/retry", false, false},
		{"internal/supplierlink", "engine", false, true},
		{"internal/snapshot", "persistence", false, true},
		{"internal/snapshot", "engine", true, false},
		{"engine/snapshot", "engine", false, false},
		{"internal/pagekit", "cmd/switchboard/app", false, true},
		{"bench", "router", false, true},
		{"admin", "cmd/switchboard/app/apptest", true, false},
		{"admin", "cmd/switchboard/app/apptest", false, true},
		{"cmd/switchboard/app", "admin", false, false},
	} {
		why := importViolation(importEdge{from: tc.from, to: tc.to, test: tc.test})
		if (why != "") != tc.bad {
			t.Errorf("%s → %s (test %v): violation %q, want forbidden=%v", tc.from, tc.to, tc.test, why, tc.bad)
		}
	}
}
