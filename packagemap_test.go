package switchboard

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packageMapDoc holds the package map: the first fenced block after its "## Packages"
// heading, one package a line, nested ones drawn under their parent with ├─ or └─.
const packageMapDoc = "docs/architecture.md"

// conceptHomes finds the concept table's rows ("| concept | homes |") below the map.
var conceptHomes = regexp.MustCompile(`(?m)^\| (quality|payouts and webhooks|fleet maintenance|service keys and the publisher directory) \|(.*)\|$`)

// codePath is a backquoted path of the tree in the concept table: `supply/quality.go`.
var codePath = regexp.MustCompile("`((?:admin|bench|cmd|engine|internal|persistence|router|supply)(?:/[A-Za-z0-9_.]+)*)`")

// mapPackages reads the packages the map names: a line that starts at its first column names
// a package (admin/, cmd/switchboard); one that starts with spaces and ├─ or └─ names a
// package inside the last one; other lines continue a description.
func mapPackages(t *testing.T, text string) []string {
	t.Helper()
	_, after, ok := strings.Cut(text, "\n## Packages\n")
	if !ok {
		t.Fatalf("%s has no \"## Packages\" section", packageMapDoc)
	}
	_, block, ok := strings.Cut(after, "\n```\n")
	if ok {
		block, _, ok = strings.Cut(block, "\n```")
	}
	if !ok {
		t.Fatalf("%s: no fenced package map in \"## Packages\"", packageMapDoc)
	}
	var out []string
	parent := ""
	for line := range strings.SplitSeq(block, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case line[0] != ' ':
			parent = strings.TrimSuffix(fields[0], "/")
			out = append(out, parent)
		case (fields[0] == "├─" || fields[0] == "└─") && len(fields) > 1:
			out = append(out, parent+"/"+fields[1])
		}
	}
	return out
}

// treePackages lists the directories of the tree that hold Go files (the top one aside).
func treePackages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := filepath.ToSlash(filepath.Dir(path)); strings.HasSuffix(path, ".go") && dir != "." {
			seen[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestPackageMap fails when docs/architecture.md's package map lacks a package of the tree
// or names one the tree does not have, or when its table of where each concept lives names
// a file or package that does not exist: the map is the newcomer's first page, and it
// follows the code.
func TestPackageMap(t *testing.T) {
	b, err := os.ReadFile(filepath.FromSlash(packageMapDoc))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	mapped := mapPackages(t, text)
	tree := treePackages(t)
	if len(tree) < 20 || len(mapped) < 20 {
		t.Fatalf("%d packages in the tree, %d in the map: is the scan broken?", len(tree), len(mapped))
	}
	for _, p := range tree {
		if !slices.Contains(mapped, p) {
			t.Errorf("package %s is not in the package map of %s", p, packageMapDoc)
		}
	}
	for _, p := range mapped {
		if !slices.Contains(tree, p) {
			t.Errorf("the package map of %s names %s, which the tree does not have", packageMapDoc, p)
		}
	}
	rows := conceptHomes.FindAllStringSubmatch(text, -1)
	if len(rows) != 4 {
		t.Fatalf("%s: %d rows of the concept table (quality, payouts and webhooks, fleet maintenance, service keys and the publisher directory), want 4", packageMapDoc, len(rows))
	}
	for _, row := range rows {
		paths := codePath.FindAllStringSubmatch(row[2], -1)
		if len(paths) == 0 {
			t.Errorf("%s: the home of %s names no path", packageMapDoc, row[1])
		}
		for _, p := range paths {
			if _, err := os.Stat(filepath.FromSlash(p[1])); err != nil {
				t.Errorf("%s: the home of %s names %s, which the tree does not have", packageMapDoc, row[1], p[1])
			}
		}
	}
}
