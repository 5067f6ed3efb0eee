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

// root is the repository's root, from this directory.
const root = "../.."

// snippet is one ```go block of a Markdown file.
type snippet struct {
	file  string   // the Markdown file, from the repository's root
	line  int      // the file's line of the block's first line of code
	code  string   // its text
	given []string // "name Type" from the given comment above its fence
}

// pos names a line of the snippet's Markdown file.
func (s snippet) pos(line int) string { return fmt.Sprintf("%s:%d", s.file, line) }

var givenRE = regexp.MustCompile(`^<!--\s*given:\s*(.*?)\s*-->\s*$`)

// markdownFiles returns the files whose Go blocks are compiled, from the
// repository's root: README.md and every docs/*.md.
func markdownFiles(t *testing.T) []string {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md: the glob is broken")
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	sort.Strings(files[1:])
	return files
}

// fence reports whether l (trimmed) opens or closes a fenced block: its
// run of backticks (3 or more) and its info string.
func fence(l string) (ticks int, info string, ok bool) {
	for ticks < len(l) && l[ticks] == '`' {
		ticks++
	}
	if ticks < 3 {
		return 0, "", false
	}
	return ticks, strings.TrimSpace(l[ticks:]), true
}

// snippets returns the ```go blocks of file, whose text is md. A block
// fenced as ```go-sketch is not compiled; any other info string starting
// with "go" is an error, so that no block escapes by a typo.
func snippets(file, md string) ([]snippet, error) {
	var out []snippet
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		ticks, info, ok := fence(strings.TrimSpace(lines[i]))
		if !ok {
			continue
		}
		lang, _, _ := strings.Cut(info, " ")
		open := i
		// The block ends at a fence of at least as many backticks and no
		// info string.
		var code []string
		for i++; i < len(lines); i++ {
			if n, inf, ok := fence(strings.TrimSpace(lines[i])); ok && n >= ticks && inf == "" {
				break
			}
			code = append(code, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: the fenced block never ends", file, open+1)
		}
		switch {
		case lang == "go":
		case lang == "go-sketch":
			continue
		case strings.HasPrefix(lang, "go"):
			return nil, fmt.Errorf("%s:%d: a block fenced as %q: use go (compiled) or go-sketch (not compiled)", file, open+1, lang)
		default:
			continue
		}
		s := snippet{file: file, line: open + 2, code: strings.Join(code, "\n")}
		if open > 0 {
			if m := givenRE.FindStringSubmatch(strings.TrimSpace(lines[open-1])); m != nil {
				for _, g := range strings.Split(m[1], ",") {
					if g = strings.TrimSpace(g); g != "" {
						s.given = append(s.given, g)
					}
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
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

// wholeFile reports whether code is a whole Go file: its first line that
// is neither blank nor a comment is a package clause.
func wholeFile(code string) bool {
	for _, l := range strings.Split(code, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "//") {
			continue
		}
		return strings.HasPrefix(l, "package ")
	}
	return false
}

// source turns s into Go source for package pkg: the snippet's file, and
// the file that declares what it is given (ctx and the names of its given
// comment), or reports why it cannot. A whole file is compiled as it is;
// declarations are compiled as a file; statements become the body of a
// function returning an error. Every package the snippet uses, it imports
// itself; pkgs (package name to path) names the packages of given types,
// and the import to show when a snippet forgot one.
func source(s snippet, pkg string, pkgs map[string]string) (code, given string, err error) {
	fset := token.NewFileSet()
	if wholeFile(s.code) {
		if len(s.given) > 0 {
			return "", "", fmt.Errorf("%s: a whole file (with its package clause) is given nothing: drop the given comment, or the package clause", s.pos(s.line))
		}
		file, err := parser.ParseFile(fset, "", s.code, 0)
		if err != nil {
			return "", "", fmt.Errorf("%s: a whole Go file that does not parse: %v", s.pos(s.line), err)
		}
		if err := checkErrors(fset, file, func(l int) string { return s.pos(s.line + l - 1) }); err != nil {
			return "", "", err
		}
		return fmt.Sprintf("//line %s\n%s\n", s.pos(s.line), s.code), "", nil
	}

	// Declarations, imports included, or imports then statements.
	// at maps a line of the parsed text to the Markdown file's.
	decls := true
	file, err := parser.ParseFile(fset, "", "package p\n"+s.code, 0)
	imports, body := "", s.code
	bodyLine := s.line
	at := func(l int) string { return s.pos(s.line + l - 2) }
	var fn *ast.FuncDecl
	if err != nil {
		decls = false
		imports, body = splitImports(s.code)
		bodyLine = s.line + strings.Count(s.code[:len(s.code)-len(body)], "\n")
		prefix := "package p\n" + imports + "\nfunc _() {\n"
		file, err = parser.ParseFile(fset, "", prefix+body+"\n}", 0)
		if err != nil {
			return "", "", fmt.Errorf("%s: neither Go declarations nor statements: %v", s.pos(s.line), err)
		}
		fn = file.Decls[len(file.Decls)-1].(*ast.FuncDecl)
		n := strings.Count(prefix, "\n")
		at = func(l int) string { return s.pos(bodyLine + l - n - 1) }
	}
	imported := map[string]bool{}
	for _, im := range file.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		for n, p := range pkgs {
			if p == path {
				name = n // the package's own name, where it differs from the path's
			}
		}
		if im.Name != nil {
			name = im.Name.Name
		}
		imported[name] = true
	}

	givens := map[string]string{"ctx": "context.Context"}
	for _, g := range s.given {
		name, typ, ok := strings.Cut(g, " ")
		if !ok {
			return "", "", fmt.Errorf("%s: given %q: want a name and a type", s.pos(s.line), g)
		}
		givens[name] = strings.TrimSpace(typ)
	}

	// A package the snippet uses without importing it: X in X.Sel, where
	// X is neither defined in the snippet nor given.
	var missing []string
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && givens[x.Name] == "" && !imported[x.Name] {
				imported[x.Name] = true // report it once
				missing = append(missing, x.Name)
			}
		}
		return true
	})
	if len(missing) > 0 {
		var show []string
		for _, m := range missing {
			if p, ok := pkgs[m]; ok {
				show = append(show, strconv.Quote(p))
			} else {
				show = append(show, m+": defined nowhere, and given by no <!-- given: "+m+" Type --> above the fence")
			}
		}
		return "", "", fmt.Errorf("%s: the block uses %s without importing it: show its import (%s)", s.pos(s.line), strings.Join(missing, ", "), strings.Join(show, "; "))
	}

	if err := checkErrors(fset, file, at); err != nil {
		return "", "", err
	}

	given, err = givenFile(pkg, givens, pkgs)
	if err != nil {
		return "", "", fmt.Errorf("%s: %v", s.pos(s.line), err)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	if decls {
		fmt.Fprintf(&b, "//line %s\n%s\n", s.pos(s.line), s.code)
		return b.String(), given, nil
	}
	// Its imports at their lines, then the body.
	if imports != "" {
		fmt.Fprintf(&b, "//line %s\n%s\n", s.pos(s.line), imports)
	}
	fmt.Fprintf(&b, "\nfunc snippet() error {\n//line %s\n%s\n", s.pos(bodyLine), body)
	// What the block defines may be left for the reader's code to use.
	for _, st := range fn.Body.List {
		for _, id := range defined(st) {
			fmt.Fprintf(&b, "\t_ = %s\n", id)
		}
	}
	b.WriteString("\treturn nil\n}\n")
	return b.String(), given, nil
}

// givenFile returns the file of package pkg that declares the given
// names, importing the packages their types name.
func givenFile(pkg string, givens map[string]string, pkgs map[string]string) (string, error) {
	need := map[string]bool{}
	for _, typ := range givens {
		for _, m := range regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\.`).FindAllStringSubmatch(typ, -1) {
			need[m[1]] = true
		}
	}
	var imports []string
	for n := range need {
		p, ok := pkgs[n]
		if !ok {
			return "", fmt.Errorf("a given type names package %s, which readmetest.go does not import", n)
		}
		imports = append(imports, fmt.Sprintf("\t%s %q\n", n, p))
	}
	sort.Strings(imports)
	var names []string
	for n := range givens {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n%s)\n\n", pkg, strings.Join(imports, ""))
	for _, n := range names {
		fmt.Fprintf(&b, "var %s %s\n", n, givens[n])
	}
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
// at names the Markdown line of a line of the parsed text.
func checkErrors(fset *token.FileSet, file *ast.File, at func(int) string) error {
	line := func(p token.Pos) string { return at(fset.Position(p).Line) }
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
					bad = fmt.Errorf("%s: the error is discarded (_): check it", line(as.Pos()))
					return false
				}
			}
			for _, e := range as.Lhs {
				if id, ok := e.(*ast.Ident); ok && id.Name == "err" {
					if i+1 == len(list) || !uses(list[i+1], "err") {
						bad = fmt.Errorf("%s: err is not checked by the next statement", line(as.Pos()))
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

// Every ```go block of README.md and docs/*.md compiles.
func TestSnippets(t *testing.T) {
	var list []snippet
	for _, f := range markdownFiles(t) {
		md, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		s, err := snippets(f, string(md))
		if err != nil {
			t.Error(err)
			continue
		}
		if f == "README.md" && len(s) == 0 {
			t.Error("README.md has no ```go block: the extraction is broken")
		}
		list = append(list, s...)
	}
	pkgs := packages(t)
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	overlay := map[string]string{}
	var targets []string
	build := func(name, code, given string) {
		for file, src := range map[string]string{"snippet.go": code, "given.go": given} {
			if src == "" {
				continue
			}
			f := filepath.Join(tmp, name+"_"+file)
			if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			overlay[filepath.Join(dir, "snippets", name, file)] = f
		}
		targets = append(targets, "./snippets/"+name)
	}
	for i, s := range list {
		name := fmt.Sprintf("s%03d", i)
		code, given, err := source(s, name, pkgs)
		if err != nil {
			t.Error(err)
			continue
		}
		build(name, code, given)
	}
	// A canary that must not compile: proves a broken snippet fails.
	code, given, err := source(snippet{file: "canary.md", line: 1, code: "x := undefinedName"}, "canary", pkgs)
	if err != nil {
		t.Fatal(err)
	}
	build("canary", code, given)

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
		t.Fatalf("go build of the snippets (the canary must fail, nothing else):\n%s", out)
	}
	t.Logf("%d snippets compiled", len(list))
}

// maxREADMEWords bounds README.md (issue 27): a newcomer reads it in five
// minutes, and depth goes to docs/.
const maxREADMEWords = 1500

// README.md stays short: its words, code included, are at most
// maxREADMEWords.
func TestREADMEIsShort(t *testing.T) {
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(string(md))); n > maxREADMEWords {
		t.Errorf("README.md has %d words, more than %d: move the depth to a page of docs/", n, maxREADMEWords)
	}
}
