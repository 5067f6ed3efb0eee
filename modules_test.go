package ratekit_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
		if _, ok := rootRequires[r]; !ok {
			t.Errorf("go.mod requires %s: every program that imports ratekit would carry it; move what needs it into a module of its own (docs/design.md, \"Modules\")", r)
		}
	}
}

// requirements returns the module paths of go.mod's require directives,
// in blocks or single lines.
func requirements(mod string) []string {
	var out []string
	block := false
	for _, line := range strings.Split(mod, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			block = true
		case block && line == ")":
			block = false
		case block && line != "" && !strings.HasPrefix(line, "//"):
			out = append(out, strings.Fields(line)[0])
		case strings.HasPrefix(line, "require ") && !strings.HasSuffix(line, "("):
			out = append(out, strings.Fields(line)[1])
		}
	}
	return out
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
