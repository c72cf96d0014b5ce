package switchboard

import (
	"fmt"
	"go/ast"
	"go/types"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// requestCtxPackages are the handler packages whose request handlers must not hand a
// *fasthttp.RequestCtx to anything that takes a context.Context (internal/httpio.DBContext).
var requestCtxPackages = []string{"./admin/...", "./supply/...", "./router/...", "./internal/pagekit/...", "./internal/openapi/...", "./cmd/switchboard/app"}

// TestNoRequestCtxAsContext fails when a handler passes a *fasthttp.RequestCtx where a
// context.Context is expected (to persistence, pgx, or any function that may pass it on):
// pgx watches ctx.Done() from its own goroutine, while fasthttp's Server.Shutdown writes the
// RequestCtx's done channel, a data race under -race. Handlers take httpio.DBContext for
// such calls.
func TestNoRequestCtxAsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the handler packages")
	}
	bad, err := requestCtxAsContext(".", requestCtxPackages...)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Errorf("%s: a *fasthttp.RequestCtx is passed as a context.Context; use httpio.DBContext", b)
	}
}

// requestCtxAsContext type-checks the non-test files of the packages matched by patterns
// (relative to dir) and lists, as "file:line:col (where)", every *fasthttp.RequestCtx that
// becomes a context.Context: a call's argument, an assignment, a declaration, a result or a
// struct field.
func requestCtxAsContext(dir string, patterns ...string) ([]string, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
			packages.NeedTypesInfo,
		Dir: dir,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	var bad []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			return nil, fmt.Errorf("%s: %v", p.PkgPath, e)
		}
		info := p.TypesInfo
		flag := func(e ast.Expr, to types.Type, where string) {
			if isRequestCtx(info.TypeOf(e)) && isContext(to) {
				bad = append(bad, fmt.Sprintf("%s (%s)", p.Fset.Position(e.Pos()), where))
			}
		}
		for _, f := range p.Syntax {
			var results []*types.Tuple // of the enclosing functions, innermost last
			var visit func(n ast.Node) bool
			visit = func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl, *ast.FuncLit:
					var sig *types.Signature
					var body *ast.BlockStmt
					if d, ok := n.(*ast.FuncDecl); ok {
						sig, _ = info.Defs[d.Name].Type().(*types.Signature)
						body = d.Body
					} else {
						l := n.(*ast.FuncLit)
						sig, _ = info.TypeOf(l).(*types.Signature)
						body = l.Body
					}
					if body == nil || sig == nil {
						return false
					}
					results = append(results, sig.Results())
					ast.Inspect(body, visit)
					results = results[:len(results)-1]
					return false
				case *ast.CallExpr:
					sig, ok := info.TypeOf(n.Fun).Underlying().(*types.Signature)
					if !ok { // a conversion or a builtin
						return true
					}
					for i, arg := range n.Args {
						flag(arg, paramType(sig, i), types.ExprString(n.Fun))
					}
				case *ast.AssignStmt:
					if len(n.Lhs) == len(n.Rhs) {
						for i, r := range n.Rhs {
							flag(r, info.TypeOf(n.Lhs[i]), "assigned to "+types.ExprString(n.Lhs[i]))
						}
					}
				case *ast.ValueSpec:
					if len(n.Names) == len(n.Values) {
						for i, v := range n.Values {
							flag(v, info.TypeOf(n.Names[i]), "declared as "+n.Names[i].Name)
						}
					}
				case *ast.ReturnStmt:
					if len(results) > 0 && results[len(results)-1].Len() == len(n.Results) {
						for i, r := range n.Results {
							flag(r, results[len(results)-1].At(i).Type(), "returned")
						}
					}
				case *ast.CompositeLit:
					st, ok := info.TypeOf(n).Underlying().(*types.Struct)
					if !ok {
						return true
					}
					for i, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							if id, ok := kv.Key.(*ast.Ident); ok {
								if fv, ok := info.Uses[id].(*types.Var); ok {
									flag(kv.Value, fv.Type(), "field "+id.Name)
								}
							}
						} else if i < st.NumFields() {
							flag(e, st.Field(i).Type(), "field "+st.Field(i).Name())
						}
					}
				}
				return true
			}
			ast.Inspect(f, visit)
		}
	}
	sort.Strings(bad)
	return bad, nil
}

// paramType is the type of the parameter that receives call argument i of sig.
func paramType(sig *types.Signature, i int) types.Type {
	params := sig.Params()
	if sig.Variadic() && i >= params.Len()-1 {
		if s, ok := params.At(params.Len() - 1).Type().(*types.Slice); ok {
			return s.Elem()
		}
	}
	if i >= params.Len() {
		return nil
	}
	return params.At(i).Type()
}

// isRequestCtx reports whether t is *fasthttp.RequestCtx.
func isRequestCtx(t types.Type) bool {
	p, ok := t.(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := p.Elem().(*types.Named)
	return ok && n.Obj().Name() == "RequestCtx" && n.Obj().Pkg() != nil &&
		strings.HasSuffix(n.Obj().Pkg().Path(), "valyala/fasthttp")
}

// isContext reports whether t is context.Context.
func isContext(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "Context" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "context"
}

// TestRequestCtxAsContext: the guard finds every way a RequestCtx becomes a context.Context
// in testdata/requestctx (the lines marked "want") and nothing else.
func TestRequestCtxAsContext(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks a package")
	}
	const file = "testdata/requestctx/requestctx.go"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(line, "// want") {
			want = append(want, i+1)
		}
	}
	bad, err := requestCtxAsContext(".", "./testdata/requestctx")
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, b := range bad {
		var line, col int
		at := b[strings.Index(b, file)+len(file):]
		if _, err := fmt.Sscanf(at, ":%d:%d", &line, &col); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		got = append(got, line)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("flagged lines %v, want %v:\n%s", got, want, strings.Join(bad, "\n"))
	}
}
