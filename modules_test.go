package ratekit_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// rootRequires is every module the library's go.mod may require, and why.
// Every requirement, tests' included, lands in the module graph of every
// program that imports ratekit, so anything heavier belongs in a module of
// its own (docs/design.md, "Modules").
var rootRequires = map[string]string{
	"pgregory.net/rapid": "the exported conformance suite",
	"go.uber.org/goleak": "the tests' goroutine-leak checks",
}

// The library's go.mod requires nothing beyond rootRequires.
func TestRootRequirements(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	reqs := requirements(string(mod))
	if len(reqs) == 0 {
		t.Fatal("no requirement found in go.mod: the parser is broken")
	}
	for _, r := range reqs {
		if _, ok := rootRequires[r.path]; !ok {
			t.Errorf("go.mod requires %s: every program that imports ratekit would carry it; move what needs it into a module of its own (docs/design.md, \"Modules\")", r.path)
		}
	}
}

// requirement is one module a go.mod requires.
type requirement struct{ path, version string }

// requirements returns the require directives of go.mod, in blocks or
// single lines.
func requirements(mod string) []requirement {
	return directives(mod, "require", func(f []string) requirement { return requirement{f[0], f[1]} })
}

// replacements maps each module path that go.mod replaces to what
// replaces it (a directory, for ratekit's own modules).
func replacements(mod string) map[string]string {
	out := map[string]string{}
	for _, r := range directives(mod, "replace", func(f []string) []string { return f }) {
		if i := slices.Index(r, "=>"); i > 0 && i+1 < len(r) {
			out[r[0]] = r[i+1]
		}
	}
	return out
}

// directives returns the directives of one verb in go.mod (single lines
// and blocks), each made by parse from its fields after the verb.
func directives[T any](mod, verb string, parse func([]string) T) []T {
	var out []T
	block := false
	for _, line := range strings.Split(mod, "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == verb && f[1] == "(":
			block = true
		case block && len(f) == 1 && f[0] == ")":
			block = false
		case block && len(f) >= 2:
			out = append(out, parse(f))
		case !block && len(f) >= 3 && f[0] == verb:
			out = append(out, parse(f[1:]))
		}
	}
	return out
}

// ratekitModule is the path of the root module; the others are below it.
const ratekitModule = "github.com/ratekit/ratekit"

// Every go.mod requires ratekit's own modules at one version, the last
// released one (v0.0.0 before the first release), written by make release
// and never a pseudo-version: the go command writes
// v0.0.0-00010101000000-000000000000 for a replaced module it adds, and no
// tag can publish that. Each is replaced by its directory, so that the
// repository builds as one; a replace is ignored where the module is a
// dependency, so the requirement is what a user's build resolves
// (docs/design.md, "Releasing").
func TestRatekitRequirementsInLockstep(t *testing.T) {
	release := regexp.MustCompile(`^v[01]\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)
	pseudo := regexp.MustCompile(`[0-9]{14}-[0-9a-f]{12}$`)
	versions := map[string][]string{} // version: the go.mod files that require it
	n := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mod := string(b)
		repl := replacements(mod)
		for _, r := range requirements(mod) {
			if r.path != ratekitModule && !strings.HasPrefix(r.path, ratekitModule+"/") {
				continue
			}
			n++
			if !release.MatchString(r.version) || pseudo.MatchString(r.version) {
				t.Errorf("%s requires %s %s: want a release version (v0 or v1, no pseudo-version), the one every go.mod requires; make release VERSION=... writes it", p, r.path, r.version)
			}
			if files := versions[r.version]; len(files) == 0 || files[len(files)-1] != p {
				versions[r.version] = append(files, p)
			}
			want := filepath.Join(".", strings.TrimPrefix(r.path, ratekitModule))
			if got, ok := repl[r.path]; !ok {
				t.Errorf("%s requires %s but does not replace it: add replace %s => %s", p, r.path, r.path, relTo(t, filepath.Dir(p), want))
			} else if filepath.Join(filepath.Dir(p), got) != want {
				t.Errorf("%s replaces %s by %s, want %s (its directory)", p, r.path, got, relTo(t, filepath.Dir(p), want))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no go.mod requires a ratekit module: the walk or the parser is broken")
	}
	if len(versions) > 1 {
		t.Errorf("go.mod files require ratekit's modules at %d versions, want one (make release VERSION=... sets them all): %v", len(versions), versions)
	}
}

// relTo returns target relative to dir, both relative to the repository.
func relTo(t *testing.T, dir, target string) string {
	t.Helper()
	r, err := filepath.Rel(dir, target)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Every module of the repository says the same go directive, and it is a
// release's first version (go 1.26.0, never 1.26.8): a dependency's go line
// is a floor for every program that imports it, and a patch release would
// force every user's toolchain up. CI also builds and tests with that Go
// (make oldest-go).
func TestGoDirective(t *testing.T) {
	root := goDirective(t, "go.mod")
	if !regexp.MustCompile(`^1\.[0-9]+\.0$`).MatchString(root) {
		t.Errorf("go.mod says go %s: want the oldest supported release's first version, such as 1.26.0", root)
	}
	n := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" || p == "go.mod" {
			return nil
		}
		n++
		if got := goDirective(t, p); got != root {
			t.Errorf("%s says go %s, the root go.mod go %s", p, got, root)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no nested go.mod found: the walk is broken")
	}
}

// goDirective returns the version of the go directive of the go.mod at p.
func goDirective(t *testing.T, p string) string {
	t.Helper()
	mod, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go ([0-9.]+)\s*$`).FindSubmatch(mod)
	if m == nil {
		t.Fatalf("%s has no go directive", p)
	}
	return string(m[1])
}
