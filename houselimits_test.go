package switchboard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The limits that keep every piece of the tree small enough to read at once. They apply to
// hand-written production code: generated files and tests are left out.
const (
	maxFileLines      = 600 // lines of one .go file
	maxFuncLines      = 80  // lines of one function or function literal, func to closing brace
	maxTypeMethods    = 40  // methods declared on one type
	maxStoreInterface = 25  // methods of one storage interface a handler or service declares
)

// sourceFile is one parsed hand-written production file.
type sourceFile struct {
	rel  string // path relative to the module root
	pkg  string // its directory, relative to the module root
	file *ast.File
}

// productionFiles parses every hand-written, non-test .go file under root.
func productionFiles(t *testing.T, root string, fset *token.FileSet) []sourceFile {
	t.Helper()
	var files []sourceFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || name == "vendor" || name == "node_modules" || name == "test-artifacts") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		files = append(files, sourceFile{rel: rel, pkg: filepath.ToSlash(filepath.Dir(rel)), file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found only %d production files: is the walk broken?", len(files))
	}
	return files
}

// TestHouseLimits holds the tree to its size limits: no file over 600 lines, no function
// over 80, no type with more than 40 methods, and handlers that reach storage only through
// small interfaces of their own.
func TestHouseLimits(t *testing.T) {
	fset := token.NewFileSet()
	files := productionFiles(t, ".", fset)
	methods := map[string]int{}
	for _, sf := range files {
		if n := fset.File(sf.file.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s: %d lines (limit %d): split it by concept", sf.rel, n, maxFileLines)
		}
		ast.Inspect(sf.file, func(n ast.Node) bool {
			var body *ast.BlockStmt
			what := "a function literal"
			switch x := n.(type) {
			case *ast.FuncDecl:
				body, what = x.Body, x.Name.Name
				if x.Recv != nil && len(x.Recv.List) == 1 {
					methods[sf.pkg+"."+receiverName(x.Recv.List[0].Type)]++
				}
			case *ast.FuncLit:
				body = x.Body
			}
			if body != nil {
				start, end := fset.Position(n.Pos()), fset.Position(body.End())
				if lines := end.Line - start.Line + 1; lines > maxFuncLines {
					t.Errorf("%s:%d: %s is %d lines (limit %d)", sf.rel, start.Line, what, lines, maxFuncLines)
				}
			}
			return true
		})
		if handlerOf(sf.pkg) != "" || serviceOf(sf.pkg) {
			checkStorageDependency(t, fset, sf)
		}
	}
	var types []string
	for typ, n := range methods {
		if n > maxTypeMethods {
			types = append(types, typ)
		}
	}
	sort.Strings(types)
	for _, typ := range types {
		t.Errorf("%s has %d methods (limit %d): split it by concept", typ, methods[typ], maxTypeMethods)
	}
}

// receiverName is the type name of a method's receiver: T for T, *T, T[P] and *T[P].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}

// checkStorageDependency fails when a handler or service file names the concrete
// persistence handle or one of its stores, or declares an interface of more than 25
// methods: storage is reached through the small interfaces the package declares.
func checkStorageDependency(t *testing.T, fset *token.FileSet, sf sourceFile) {
	t.Helper()
	ast.Inspect(sf.file, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == "persistence" &&
				(x.Sel.Name == "DB" || strings.HasSuffix(x.Sel.Name, "Store")) {
				t.Errorf("%s:%d: names persistence.%s: declare the interface this code needs instead",
					sf.rel, fset.Position(x.Pos()).Line, x.Sel.Name)
			}
		case *ast.TypeSpec:
			if it, ok := x.Type.(*ast.InterfaceType); ok {
				if n := len(it.Methods.List); n > maxStoreInterface {
					t.Errorf("%s:%d: interface %s has %d methods (limit %d)",
						sf.rel, fset.Position(x.Pos()).Line, x.Name.Name, n, maxStoreInterface)
				}
			}
		}
		return true
	})
}
