package readmetest

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// snippet is one ```go block of the README.
type snippet struct {
	line  int      // the README line of its first line of code
	code  string   // its text
	given []string // "name Type" from the given comment above its fence
}

var givenRE = regexp.MustCompile(`^<!--\s*given:\s*(.*?)\s*-->\s*$`)

// snippets returns the ```go blocks of the Markdown text md.
func snippets(t *testing.T, md string) []snippet {
	var out []snippet
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```go" {
			continue
		}
		s := snippet{line: i + 2}
		if i > 0 {
			if m := givenRE.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				for _, g := range strings.Split(m[1], ",") {
					if g = strings.TrimSpace(g); g != "" {
						s.given = append(s.given, g)
					}
				}
			}
		}
		var code []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			code = append(code, lines[i])
		}
		if i == len(lines) {
			t.Fatalf("README.md:%d: the ```go block never ends", s.line-1)
		}
		s.code = strings.Join(code, "\n")
		out = append(out, s)
	}
	return out
}

// packages returns the packages readmetest.go imports, by package name.
func packages(t *testing.T) map[string]string {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	args := append([]string{"list", "-f", "{{.Name}} {{.ImportPath}}"}, strings.Fields(string(out))...)
	out, err = exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, path, _ := strings.Cut(l, " ")
		if prev, dup := pkgs[name]; dup {
			t.Fatalf("two packages named %s in readmetest.go: %s and %s", name, prev, path)
		}
		pkgs[name] = path
	}
	return pkgs
}

// source turns s into the Go source of package pkg, or reports why it
// cannot. Statements become the body of a function returning an error;
// the packages it uses are imported by name from pkgs.
func source(s snippet, pkg string, pkgs map[string]string) (string, error) {
	names := map[string]string{} // package name -> path
	for n, p := range pkgs {
		names[n] = p
	}
	byPath := map[string]string{}
	for n, p := range pkgs {
		byPath[p] = n
	}
	fset := token.NewFileSet()

	// Declarations, imports included, or imports then statements.
	// readme maps a line of the parsed text to the README's.
	decls := true
	file, err := parser.ParseFile(fset, "", "package p\n"+s.code, 0)
	imports, body := "", s.code
	bodyLine := s.line
	readme := func(l int) int { return s.line + l - 2 }
	var fn *ast.FuncDecl
	if err != nil {
		decls = false
		imports, body = splitImports(s.code)
		bodyLine = s.line + strings.Count(s.code[:len(s.code)-len(body)], "\n")
		prefix := "package p\n" + imports + "\nfunc _() {\n"
		file, err = parser.ParseFile(fset, "", prefix+body+"\n}", 0)
		if err != nil {
			return "", fmt.Errorf("neither Go declarations nor statements: %v", err)
		}
		fn = file.Decls[len(file.Decls)-1].(*ast.FuncDecl)
		n := strings.Count(prefix, "\n")
		readme = func(l int) int { return bodyLine + l - n - 1 }
	}
	explicit := map[string]bool{}
	for _, im := range file.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := byPath[path]
		if im.Name != nil {
			name = im.Name.Name
		}
		if name == "" { // its last element, as for most packages
			name = path[strings.LastIndex(path, "/")+1:]
		}
		explicit[name] = true
	}

	given := map[string]string{"ctx": "context.Context"}
	for _, g := range s.given {
		name, typ, ok := strings.Cut(g, " ")
		if !ok {
			return "", fmt.Errorf("given %q: want a name and a type", g)
		}
		given[name] = strings.TrimSpace(typ)
	}

	// Packages to import for it: unresolved X in X.Sel, and the
	// packages the given types name.
	need := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && given[x.Name] == "" {
				need[x.Name] = true
			}
		}
		return true
	})
	for _, typ := range given {
		for _, m := range regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\.`).FindAllStringSubmatch(typ, -1) {
			need[m[1]] = true
		}
	}
	var auto []string
	for n := range need {
		if explicit[n] {
			continue
		}
		p, ok := names[n]
		if !ok {
			return "", fmt.Errorf("uses %s, which is neither defined, nor given (<!-- given: %s Type --> above the fence), nor a package readmetest.go imports", n, n)
		}
		auto = append(auto, fmt.Sprintf("%s %q", n, p))
	}
	sort.Strings(auto)

	if err := checkErrors(fset, file, readme); err != nil {
		return "", err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n", pkg)
	for _, a := range auto {
		fmt.Fprintf(&b, "\t%s\n", a)
	}
	b.WriteString(")\n\n")
	var gs []string
	for n := range given {
		gs = append(gs, n)
	}
	sort.Strings(gs)
	vars := ""
	for _, n := range gs {
		vars += fmt.Sprintf("var %s %s\n", n, given[n])
	}
	if decls {
		fmt.Fprintf(&b, "//line README.md:%d\n%s\n\n%s", s.line, s.code, vars)
		return b.String(), nil
	}
	// Its imports at their README lines, then the body.
	if imports != "" {
		fmt.Fprintf(&b, "//line README.md:%d\n%s\n", s.line, imports)
	}
	b.WriteString(vars)
	fmt.Fprintf(&b, "\nfunc snippet() error {\n//line README.md:%d\n%s\n", bodyLine, body)
	// What the block defines may be left for the reader's code to use.
	for _, st := range fn.Body.List {
		for _, id := range defined(st) {
			fmt.Fprintf(&b, "\t_ = %s\n", id)
		}
	}
	b.WriteString("\treturn nil\n}\n")
	return b.String(), nil
}

// splitImports separates the import declarations that open code from the
// rest.
func splitImports(code string) (imports, rest string) {
	lines := strings.Split(code, "\n")
	i := 0
	for i < len(lines) {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "":
			i++
		case strings.HasPrefix(l, "import ("):
			for i < len(lines) && strings.TrimSpace(lines[i]) != ")" {
				i++
			}
			i++
		case strings.HasPrefix(l, "import "):
			i++
		default:
			return strings.Join(lines[:i], "\n"), strings.Join(lines[i:], "\n")
		}
	}
	return code, ""
}

// defined returns the names a statement defines in its block.
func defined(st ast.Stmt) []string {
	var out []string
	add := func(id *ast.Ident) {
		if id.Name != "_" {
			out = append(out, id.Name)
		}
	}
	switch st := st.(type) {
	case *ast.AssignStmt:
		if st.Tok == token.DEFINE {
			for _, e := range st.Lhs {
				add(e.(*ast.Ident))
			}
		}
	case *ast.DeclStmt:
		if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
			for _, sp := range g.Specs {
				for _, id := range sp.(*ast.ValueSpec).Names {
					add(id)
				}
			}
		}
	}
	return out
}

// checkErrors reports a call whose last result is discarded with _, and an
// err that the next statement of its block does not use.
// readme maps a line of the parsed text to the README's.
func checkErrors(fset *token.FileSet, file *ast.File, readme func(int) int) error {
	line := func(p token.Pos) int { return readme(fset.Position(p).Line) }
	var bad error
	ast.Inspect(file, func(n ast.Node) bool {
		if bad != nil {
			return false
		}
		var list []ast.Stmt
		switch b := n.(type) {
		case *ast.BlockStmt:
			list = b.List
		case *ast.CaseClause:
			list = b.Body
		case *ast.CommClause:
			list = b.Body
		default:
			return true
		}
		for i, st := range list {
			as, ok := st.(*ast.AssignStmt)
			if !ok || len(as.Rhs) != 1 {
				continue
			}
			if _, call := as.Rhs[0].(*ast.CallExpr); call && len(as.Lhs) > 1 {
				if id, ok := as.Lhs[len(as.Lhs)-1].(*ast.Ident); ok && id.Name == "_" {
					bad = fmt.Errorf("README.md:%d: the error is discarded (_): check it", line(as.Pos()))
					return false
				}
			}
			for _, e := range as.Lhs {
				if id, ok := e.(*ast.Ident); ok && id.Name == "err" {
					if i+1 == len(list) || !uses(list[i+1], "err") {
						bad = fmt.Errorf("README.md:%d: err is not checked by the next statement", line(as.Pos()))
						return false
					}
				}
			}
		}
		return true
	})
	return bad
}

// uses reports whether n mentions the identifier name.
func uses(n ast.Node, name string) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && id.Name == name {
			found = true
		}
		return !found
	})
	return found
}

// Every ```go block of README.md compiles.
func TestREADMESnippets(t *testing.T) {
	md, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	list := snippets(t, string(md))
	if len(list) == 0 {
		t.Fatal("README.md has no ```go block: the extraction is broken")
	}
	pkgs := packages(t)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	overlay := map[string]string{}
	var targets []string
	build := func(name, src string) {
		f := filepath.Join(tmp, name+".go")
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(dir, "snippets", name, "snippet.go")] = f
		targets = append(targets, "./snippets/"+name)
	}
	for i, s := range list {
		name := fmt.Sprintf("s%02d", i)
		src, err := source(s, name, pkgs)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "README.md:") {
				err = fmt.Errorf("README.md:%d: %v", s.line, err)
			}
			t.Error(err)
			continue
		}
		build(name, src)
	}
	// A canary that must not compile: proves a broken snippet fails.
	canary, err := source(snippet{line: 1, code: "x := undefinedName"}, "canary", pkgs)
	if err != nil {
		t.Fatal(err)
	}
	build("canary", canary)

	o, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	of := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(of, o, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("go", append([]string{"build", "-overlay", of}, targets...)...).CombinedOutput()
	var broken []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "# ") {
			broken = append(broken, l)
		}
	}
	if len(broken) != 1 || !strings.HasSuffix(broken[0], "/snippets/canary") {
		t.Fatalf("go build of the README's snippets (the canary must fail, nothing else):\n%s", out)
	}
	t.Logf("%d snippets compiled", len(list))
}
