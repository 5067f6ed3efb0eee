package readmetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goIndex is what the repository's Go code declares, read from its
// non-test files (and its test files' Test, Benchmark, Example and Fuzz
// functions): each package's top-level names, by package name (two
// packages of one name share an entry), and the fields and methods of
// each type, by "pkg.Type".
type goIndex struct {
	pkgs    map[string]map[string]bool // package name -> top-level names
	members map[string]map[string]bool // "pkg.Type" -> fields and methods
	embeds  map[string][]string        // "pkg.Type" -> "pkg.Type" it embeds
	types   map[string][]string        // "Type" -> every "pkg.Type"
}

// testFuncRE names the functions of test files that docs cite.
var testFuncRE = regexp.MustCompile(`^(Test|Benchmark|Example|Fuzz)`)

// indexRepo parses every .go file of the repository (every module,
// outside testdata), but package main's.
func indexRepo(t *testing.T) *goIndex {
	t.Helper()
	ix := &goIndex{pkgs: map[string]map[string]bool{}, members: map[string]map[string]bool{}, embeds: map[string][]string{}, types: map[string][]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "testdata" || (strings.HasPrefix(n, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		test := strings.HasSuffix(path, "_test.go")
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := strings.TrimSuffix(f.Name.Name, "_test")
		if pkg == "main" {
			return nil
		}
		if ix.pkgs[pkg] == nil {
			ix.pkgs[pkg] = map[string]bool{}
		}
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				switch {
				case decl.Recv == nil && (!test || testFuncRE.MatchString(decl.Name.Name)):
					ix.pkgs[pkg][decl.Name.Name] = true
				case decl.Recv != nil && !test:
					if _, typ := typeName(pkg, decl.Recv.List[0].Type); typ != "" {
						ix.member(typ, decl.Name.Name)
					}
				}
			case *ast.GenDecl:
				if test {
					continue
				}
				for _, spec := range decl.Specs {
					switch spec := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							ix.pkgs[pkg][n.Name] = true
						}
					case *ast.TypeSpec:
						ix.pkgs[pkg][spec.Name.Name] = true
						ix.addType(pkg, spec.Name.Name, spec.Type)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// member records that the type key ("pkg.Type") has the field or method m.
func (ix *goIndex) member(key, m string) {
	if ix.members[key] == nil {
		ix.members[key] = map[string]bool{}
	}
	ix.members[key][m] = true
}

// addType records the type name of package pkg, declared as typ, with
// its fields or methods.
func (ix *goIndex) addType(pkg, name string, typ ast.Expr) {
	key := pkg + "." + name
	ix.types[name] = append(ix.types[name], key)
	if ix.members[key] == nil {
		ix.members[key] = map[string]bool{}
	}
	var fields *ast.FieldList
	switch typ := typ.(type) {
	case *ast.StructType:
		fields = typ.Fields
	case *ast.InterfaceType:
		fields = typ.Methods
	default:
		return
	}
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			if n, e := typeName(pkg, f.Type); e != "" {
				ix.member(key, n)
				ix.embeds[key] = append(ix.embeds[key], e)
			}
			continue
		}
		for _, n := range f.Names {
			ix.member(key, n.Name)
		}
	}
}

// typeName returns the name of the type of a receiver or an embedded
// field of package pkg (T in T, *T, T[P], p.T), and its key ("pkg.T",
// "p.T").
func typeName(pkg string, e ast.Expr) (name, key string) {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.SelectorExpr:
			if p, ok := x.X.(*ast.Ident); ok {
				return x.Sel.Name, p.Name + "." + x.Sel.Name
			}
			return "", ""
		case *ast.Ident:
			return x.Name, pkg + "." + x.Name
		default:
			return "", ""
		}
	}
}

// hasMember reports whether the type key ("pkg.Type") has the field or
// method m, directly or through a type it embeds.
func (ix *goIndex) hasMember(key, m string, seen map[string]bool) bool {
	if ix.members[key][m] {
		return true
	}
	if seen[key] {
		return false
	}
	seen[key] = true
	for _, e := range ix.embeds[key] {
		if ix.hasMember(e, m, seen) {
			return true
		}
	}
	return false
}

// exported reports whether every part of a dotted name is exported.
func exported(parts []string) bool {
	for _, p := range parts {
		if !token.IsExported(p) {
			return false
		}
	}
	return true
}

// check returns why the name (a.b.c, from a code span) is not what the
// code declares, or "" when it is, or when it is not a name go doc
// would show of ratekit's:
//
//   - pkg.Name, where pkg is a package of the repository and Name is
//     exported: Name is declared at its top level; pkg.Type.Member: Type
//     is, and has the exported field or method Member;
//   - Type.Member, both exported, where Type is a type of the repository
//     (and no package's name): some type of that name has the field or
//     method.
//
// Anything else (a variable, another library's package, a metric) is
// not checked. What follows a member (a field's field) is not followed.
func (ix *goIndex) check(name string) string {
	parts := strings.Split(name, ".")
	var keys []string
	if top, ok := ix.pkgs[parts[0]]; ok {
		if !exported(parts[1:]) {
			return ""
		}
		if !top[parts[1]] {
			return "package " + parts[0] + " declares no " + parts[1]
		}
		if len(parts) == 2 {
			return ""
		}
		keys = []string{parts[0] + "." + parts[1]}
		parts = parts[1:]
	} else {
		keys = ix.types[parts[0]]
		if len(keys) == 0 || !exported(parts) {
			return ""
		}
	}
	for _, k := range keys {
		if ix.hasMember(k, parts[1], map[string]bool{}) {
			return ""
		}
	}
	return "no type " + strings.Join(keys, " or ") + " has a field or method " + parts[1]
}

var (
	// codeSpanRE finds `code` spans of one line.
	codeSpanRE = regexp.MustCompile("`([^`\n]+)`")
	// qualifiedRE is a.b or a.b.c, perhaps called: `core.Wait(ctx, ...)`.
	qualifiedRE = regexp.MustCompile(`^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(.*\))?$`)
)

// prose returns md without its fenced blocks (compiled by TestSnippets),
// blanked line for line so that line numbers stay.
func prose(md string) []string {
	lines := strings.Split(md, "\n")
	inFence := 0
	for i, l := range lines {
		if n, info, ok := fence(strings.TrimSpace(l)); ok {
			switch {
			case inFence == 0:
				inFence = n
			case n >= inFence && info == "":
				inFence = 0
			}
			lines[i] = ""
			continue
		}
		if inFence != 0 {
			lines[i] = ""
		}
	}
	return lines
}

// notInCodeRE is a comment of a Markdown file that lists the names it
// writes like Go names but that are not (any more) in the code: a type
// that was removed, a span's name; a remark in parentheses is left out.
// Each must be one that check refuses.
var notInCodeRE = regexp.MustCompile(`<!--\s*not in the code:\s*(.*?)\s*-->`)

// Every Go name of README.md and docs/*.md written in a code span
// (`tokenbucket.Config.Capacity`, `Limiter.Decide`, `core.Wait(ctx, l,
// key, n)`) that names one of ratekit's packages or types is declared
// by the code: a renamed or removed name fails here, as a Go block that
// no longer compiles fails TestSnippets. A file may list names it writes
// so that are not the code's (`core.KeyCopier`, removed; a span named
// `ratekit.AllowN`) in a comment: <!-- not in the code: core.KeyCopier,
// ratekit.AllowN -->.
func TestNames(t *testing.T) {
	ix := indexRepo(t)
	if len(ix.pkgs["core"]) == 0 || !ix.hasMember("core.Limiter", "Decide", map[string]bool{}) {
		t.Fatal("the index of the repository's Go code is broken: no core, or no Limiter.Decide")
	}
	checked := 0
	for _, f := range markdownFiles(t) {
		md, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		notInCode := map[string]bool{}
		for _, m := range notInCodeRE.FindAllStringSubmatch(string(md), -1) {
			list := regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(m[1], "") // a remark in parentheses
			for _, n := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
				notInCode[n] = true
				if ix.check(n) == "" {
					t.Errorf("%s: <!-- not in the code: %s -->: the code declares it, or it is no name of ratekit's: take it out of the comment", f, n)
				}
			}
		}
		for i, l := range prose(string(md)) {
			for _, m := range codeSpanRE.FindAllStringSubmatch(l, -1) {
				q := qualifiedRE.FindStringSubmatch(strings.TrimSpace(m[1]))
				if q == nil || notInCode[q[1]] {
					continue
				}
				if why := ix.check(q[1]); why != "" {
					t.Errorf("%s:%d: `%s`: %s (or, if it is not meant as a name of the code, list it in a <!-- not in the code: ... --> comment)", f, i+1, m[1], why)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no qualified name in a code span of README.md or docs/*.md: the search is broken")
	}
	t.Logf("%d names checked", checked)
}

// check finds what the code does not declare, and leaves alone what is
// not ratekit's.
func TestCheckName(t *testing.T) {
	ix := indexRepo(t)
	tests := []struct {
		give string
		bad  bool
	}{
		{"gcra.Config.Burst", false},
		{"tokenbucket.Config.Burst", true},
		{"Limiter.Decide", false},
		{"Limiter.Decides", true},
		{"core.Request.Params", false},
		{"core.Wait", false},
		{"core.NoSuchThing", true},
		{"ratekit.CarryUsed", false},
		{"scriptproto.Pipe", true},
		{"redis.Options", false}, // another library's
		{"d.RetryAfter", false},  // a variable
		{"Decision.Blocked", false},
	}
	for _, tt := range tests {
		if why := ix.check(tt.give); (why != "") != tt.bad {
			t.Errorf("check(%q) = %q, want a failure: %v", tt.give, why, tt.bad)
		}
	}
}
