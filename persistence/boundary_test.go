package persistence_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyPersistenceTalksSQL holds the layering: the handlers, the shared kit and the
// command reach PostgreSQL through persistence only, so none of their non-test files imports
// pgx (no SQL, no pgx.Tx outside persistence).
func TestOnlyPersistenceTalksSQL(t *testing.T) {
	for _, dir := range []string{"../admin", "../supply", "../router", "../internal", "../cmd"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "github.com/jackc/pgx") {
					t.Errorf("%s imports %s: database access belongs in persistence", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
