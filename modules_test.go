package ratekit_test

import (
	"os"
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
