package switchboard

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docRefsFile is this file: it names the forbidden references in order to find them.
const docRefsFile = "docrefs_test.go"

var (
	// mdRef is a path to a Markdown document, possibly inside a URL (skipped).
	mdRef = regexp.MustCompile(`[A-Za-z0-9_.:/-]*[A-Za-z0-9_-]\.md\b`)
	// rulesSection is a citation of a section of docs/rules.md.
	rulesSection = regexp.MustCompile(`docs/rules\.md,? §(\d+)`)
	// headingRef is a citation of a heading or a bold paragraph lead of a document by its
	// words: docs/x.md, "Words" (the quotation may run on to the next line: what is on this
	// one is checked).
	headingRef = regexp.MustCompile(`\b(docs/[A-Za-z0-9_-]+\.md),? "([^"]+)`)
	// boldLead is a bold phrase, which leads a paragraph or an item as a small heading.
	boldLead = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	// outside names documents that are not the project's: the old contract and spec files,
	// and the steering folder beside the repository, which nothing may read or cite.
	outside = regexp.MustCompile(`\bCONTRACT\b|\bspec/[A-Za-z0-9_./-]+|\.\./shared\b`)
)

// docRefFiles lists the files whose text may cite documents: Go, Markdown and SQL.
func docRefFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "bin" || name == "test-artifacts" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(name) {
		case ".go", ".md", ".sql":
			if path != docRefsFile {
				out = append(out, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rulesSections reads the section numbers of docs/rules.md ("## §5 Matching ...").
func rulesSections(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("docs", "rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "## §"); ok {
			n, _, _ := strings.Cut(rest, " ")
			out[n] = true
		}
	}
	return out
}

// TestDocumentReferences fails when a Go, Markdown or SQL file cites a document that is not
// in the repository (a `.md` path under one of the tree's top folders, `docs/x.md`, or one
// relative to the citing file, `../README.md`), a section of docs/rules.md that does not
// exist, words (docs/x.md, "Words") that no heading or bold lead of the document holds, or a
// document outside the project (CONTRACT, spec/…, ../shared).
func TestDocumentReferences(t *testing.T) {
	sections := rulesSections(t)
	if len(sections) < 5 {
		t.Fatalf("docs/rules.md has %d sections: is its heading format (## §N) still the one read here?", len(sections))
	}
	exists := func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	}
	headings := map[string][]string{}
	headingsOf := func(doc string) func(words string) bool {
		hs, ok := headings[doc]
		if !ok {
			b, _ := os.ReadFile(filepath.FromSlash(doc)) // a missing document is reported below
			for line := range strings.SplitSeq(string(b), "\n") {
				if h, ok := strings.CutPrefix(line, "#"); ok {
					hs = append(hs, strings.ToLower(strings.TrimLeft(h, "# ")))
				}
				for _, m := range boldLead.FindAllStringSubmatch(line, -1) {
					hs = append(hs, strings.ToLower(m[1]))
				}
			}
			headings[doc] = hs
		}
		return func(words string) bool {
			words = strings.ToLower(strings.TrimSpace(words))
			return slices.ContainsFunc(hs, func(h string) bool { return strings.Contains(h, words) })
		}
	}
	files := docRefFiles(t)
	topDirs := map[string]bool{}
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			topDirs[e.Name()] = true
		}
	}
	checked := 0
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			for _, m := range outside.FindAllString(line, -1) {
				t.Errorf("%s:%d cites %q, a document outside the repository: cite docs/rules.md §N", path, n, m)
			}
			for _, loc := range mdRef.FindAllStringIndex(line, -1) {
				ref := line[loc[0]:loc[1]]
				if strings.Contains(ref, "://") || strings.HasPrefix(ref, ":") {
					continue // a URL
				}
				if rest := line[loc[1]:]; len(rest) > 1 && rest[0] == '.' && rest[1] != ' ' {
					continue // a longer name such as x.md.tmpl, not a Markdown document
				}
				var p string
				switch first, _, _ := strings.Cut(ref, "/"); {
				case first == "." || first == "..":
					p = filepath.Join(filepath.Dir(path), filepath.FromSlash(ref)) // relative to the citing file
				case first != ref && topDirs[first]:
					p = filepath.FromSlash(ref) // from the top of the tree, or (a Markdown link) the citing file's folder
				default:
					continue // a bare name or an output path (bench's Out/performance.md), not a citation
				}
				checked++
				if rel, err := filepath.Rel(".", p); err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d cites %s, which is outside the repository", path, n, ref)
				} else if !exists(p) && !exists(filepath.Join(filepath.Dir(path), filepath.FromSlash(ref))) {
					t.Errorf("%s:%d cites %s, which is not in the repository", path, n, ref)
				}
			}
			for _, m := range headingRef.FindAllStringSubmatch(line, -1) {
				if !headingsOf(m[1])(m[2]) {
					t.Errorf("%s:%d cites %s, %q, which no heading or bold lead of %s holds", path, n, m[1], m[2], m[1])
				}
			}
			for _, m := range rulesSection.FindAllStringSubmatch(line, -1) {
				if !sections[m[1]] {
					t.Errorf("%s:%d cites docs/rules.md §%s, which docs/rules.md does not have", path, n, m[1])
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		f.Close()
	}
	if checked < 20 {
		t.Fatalf("only %d document references found in %d files: is the scan broken?", checked, len(files))
	}
}
