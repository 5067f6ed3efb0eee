package readmetest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms"
)

// The procedures of docs/design.md ("Adding an algorithm", "Adding a
// store") are followed literally on a copy of the repository: a copy of
// an existing algorithm and of an existing adapter under new names, and
// then each place outside their folders the procedure names, and only
// those. The copy must then build and pass the tests that could miss
// them: a place the build or a test needs that the procedure does not
// name fails here, and so does a place the test edits that the procedure
// no longer names. Fast on purpose, with few rapid checks: the tests of
// every package of the root module that imports the registry (package
// algorithms), the copies' own tests, faulttest's check of its client
// lists and its contention test (every algorithm on every store), and
// the Makefile's list of the modules run on every server. The other
// modules that use the registry (the demo, the benchmarks, rules) build
// on it as before and are not run here.

// The copies: an algorithm and an adapter, and the names they get.
const (
	fromAlg, newAlg, newAlgTitle = "tokenbucket", "copiedbucket", "Copied bucket"
	fromStore, newStore          = "redigo", "redigo2"
)

// copyTree copies the repository at src to dst, without .git.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyFolder copies the folder from to to (both from the tree's root),
// renaming files and rewriting contents with r.
func copyFolder(t *testing.T, tree, from, to string, r func(string) string) {
	t.Helper()
	src := filepath.Join(tree, from)
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(tree, to, r(rel))
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(out, []byte(r(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// edit rewrites a file of the tree with f, which reports what is wrong
// when the file is not as the step expects.
func edit(t *testing.T, tree, file string, f func(string) (string, error)) {
	t.Helper()
	p := filepath.Join(tree, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f(string(b))
	if err != nil {
		t.Fatalf("%s: %v (the procedure's step cannot be followed on this file as it is)", file, err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// duplicate inserts, after the first match of re in s, a copy of it
// rewritten by r.
func duplicate(s string, re *regexp.Regexp, r func(string) string) (string, error) {
	loc := re.FindStringIndex(s)
	if loc == nil {
		return "", fmt.Errorf("nothing matches %s", re)
	}
	m := s[loc[0]:loc[1]]
	return s[:loc[1]] + r(m) + s[loc[1]:], nil
}

// replaceOnce replaces the one occurrence of old in s.
func replaceOnce(s, old, new string) (string, error) {
	if n := strings.Count(s, old); n != 1 {
		return "", fmt.Errorf("%q occurs %d times, want once", old, n)
	}
	return strings.Replace(s, old, new, 1), nil
}

// procedure returns the paragraph of docs/design.md that starts with
// the bold title (up to the next bold title or blank line).
func procedure(t *testing.T, tree, title string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tree, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "**"+title+":**")
	if i < 0 {
		t.Fatalf("docs/design.md has no **%s:** paragraph", title)
	}
	s = s[i+len(title)+5:]
	if j := strings.Index(s, "\n**"); j >= 0 {
		s = s[:j]
	}
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return strings.Join(strings.Fields(s), " ")
}

// run runs a command in dir of the tree and fails the test with its
// output if it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("in %s: %s %s: %v\n%s", dir, name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// numberWord spells n as the docs do ("six").
func numberWord(t *testing.T, n int) string {
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}
	if n >= len(words) {
		t.Fatalf("%d algorithms: spell it in numberWord", n)
	}
	return words[n]
}

// addAlgorithm follows "Adding an algorithm": a copy of fromAlg's folder
// as newAlg, its line in algorithms.All, and the docs that list the
// algorithms. It returns what the procedure must name, for each step
// outside the folder.
func addAlgorithm(t *testing.T, tree string) []string {
	word := regexp.MustCompile(`\b` + fromAlg + `\b`)
	copyFolder(t, tree, "algorithms/"+fromAlg, "algorithms/"+newAlg, func(s string) string {
		return strings.ReplaceAll(word.ReplaceAllString(s, newAlg), fromAlg+"_", newAlg+"_")
	})

	// One line in algorithms.All, with its import.
	edit(t, tree, "algorithms/algorithms.go", func(s string) (string, error) {
		s, err := duplicate(s, regexp.MustCompile(`(?m)^\t"github.com/ratekit/ratekit/algorithms/`+fromAlg+`"\n`), func(m string) string {
			return strings.Replace(m, fromAlg, newAlg, 1)
		})
		if err != nil {
			return "", err
		}
		return duplicate(s, regexp.MustCompile(`(?s)\tdefine\(`+fromAlg+`\.New,.*?\}\),\n`), func(m string) string {
			m = strings.ReplaceAll(m, fromAlg+".", newAlg+".")
			return regexp.MustCompile(`title: "[^"]*"`).ReplaceAllString(m, `title: "`+newAlgTitle+`"`)
		})
	})

	// The docs that list the algorithms: every count, README's table and
	// names, docs/algorithms.md's list and table, the root package doc.
	before, after := numberWord(t, len(algorithms.All)), numberWord(t, len(algorithms.All)+1)
	count := regexp.MustCompile(`(?i)\b` + before + `(\s+algorithms\b)`)
	docs, err := filepath.Glob(filepath.Join(tree, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md", "doc.go"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	for _, f := range files {
		edit(t, tree, f, func(s string) (string, error) {
			return count.ReplaceAllStringFunc(s, func(m string) string {
				w := after
				if m[0] >= 'A' && m[0] <= 'Z' {
					w = strings.ToUpper(after[:1]) + after[1:]
				}
				return w + m[len(before):]
			}), nil
		})
	}
	row := regexp.MustCompile("(?m)^\\| [^|]+ \\| `algorithms/" + fromAlg + "` \\|.*\n")
	newRow := func(m string) string {
		m = strings.Replace(m, "algorithms/"+fromAlg, "algorithms/"+newAlg, 1)
		return regexp.MustCompile(`^\| [^|]+ \|`).ReplaceAllString(m, "| "+newAlgTitle+" |")
	}
	edit(t, tree, "README.md", func(s string) (string, error) {
		s, err := duplicate(s, row, newRow)
		if err != nil {
			return "", err
		}
		return duplicate(s, regexp.MustCompile(`(?i)\b`+after+`\s+algorithms:\s*`), func(string) string {
			return strings.ToLower(newAlgTitle) + ", "
		})
	})
	edit(t, tree, "docs/algorithms.md", func(s string) (string, error) {
		s, err := duplicate(s, row, newRow)
		if err != nil {
			return "", err
		}
		loc := regexp.MustCompile("(?m)^- \\*\\*[^*]+\\*\\* \\(`" + fromAlg + "`\\)").FindStringIndex(s)
		if loc == nil {
			return "", fmt.Errorf("no item of the list of algorithms for %s", fromAlg)
		}
		return s[:loc[0]] + "- **" + newAlgTitle + "** (`" + newAlg + "`): a copy of the token bucket.\n" + s[loc[0]:], nil
	})
	edit(t, tree, "doc.go", func(s string) (string, error) {
		return replaceOnce(s, "algorithms/"+fromAlg+",", "algorithms/"+fromAlg+", "+newAlg+",")
	})
	// The lists that part the algorithms into buckets and windows: the
	// copy has a Carry, as its original.
	for _, f := range []string{"docs/algorithms.md", "carry.go"} {
		edit(t, tree, f, func(s string) (string, error) {
			n := 0
			s = regexp.MustCompile(`\([^()]*,[^()]*\)`).ReplaceAllStringFunc(s, func(list string) string {
				if !regexp.MustCompile(`\b` + fromAlg + `\b`).MatchString(list) {
					return list
				}
				n++
				return regexp.MustCompile("`?\\b"+fromAlg+"\\b`?").ReplaceAllStringFunc(list, func(m string) string {
					return m + ", " + strings.ReplaceAll(m, fromAlg, newAlg)
				})
			})
			if n == 0 {
				return "", fmt.Errorf("no list in parentheses holds %s", fromAlg)
			}
			return s, nil
		})
	}
	// The example of package algorithms prints every entry of All.
	edit(t, tree, "algorithms/example_test.go", func(s string) (string, error) {
		return duplicate(s, regexp.MustCompile(`(?m)^\t// `+fromAlg+` \(.*\n`), func(m string) string {
			m = strings.Replace(m, fromAlg, newAlg, 1)
			return regexp.MustCompile(`\([^:]*\):`).ReplaceAllString(m, "("+newAlgTitle+"):")
		})
	})
	return []string{"algorithms.All", "README", "docs/algorithms.md", "carry.go", "root package doc", "example of package `algorithms`"}
}

// addStore follows "Adding a store": a copy of store/fromStore as
// store/newStore, a module of its own, and its clients in
// testkit/faulttest. It returns what the procedure must name, for each
// step outside the folder.
func addStore(t *testing.T, tree string) []string {
	word := regexp.MustCompile(`(^|[^/\w])` + fromStore + `\b`)
	copyFolder(t, tree, "store/"+fromStore, "store/"+newStore, func(s string) string {
		s = strings.ReplaceAll(s, "ratekit/store/"+fromStore, "ratekit/store/"+newStore)
		s = strings.ReplaceAll(s, fromStore+"store", newStore+"store")
		return word.ReplaceAllString(s, "${1}"+newStore)
	})

	// faulttest: a client named newStore in adapters and outageClients,
	// the store's requirement and replace directive in its go.mod.
	client := func(list string) func(string) (string, error) {
		return func(s string) (string, error) {
			s, err := duplicate(s, regexp.MustCompile(`(?s)\n\t\{"`+fromStore+`", func.*?\n\t\}\},`), func(m string) string {
				m = strings.Replace(m, `"`+fromStore+`"`, `"`+newStore+`"`, 1)
				return strings.ReplaceAll(m, fromStore+"store.", newStore+"store.")
			})
			if err != nil {
				return "", fmt.Errorf("%s: %v", list, err)
			}
			return duplicate(s, regexp.MustCompile(`(?m)^\t`+fromStore+`store "github.com/ratekit/ratekit/store/`+fromStore+`"\n`), func(string) string {
				return "\t" + newStore + `store "github.com/ratekit/ratekit/store/` + newStore + "\"\n"
			})
		}
	}
	edit(t, tree, "testkit/faulttest/clients_test.go", client("adapters"))
	edit(t, tree, "testkit/faulttest/outage_test.go", client("outageClients"))
	run(t, filepath.Join(tree, "testkit", "faulttest"), nil, "go", "mod", "edit",
		"-require=github.com/ratekit/ratekit/store/"+newStore+"@v0.0.0",
		"-replace=github.com/ratekit/ratekit/store/"+newStore+"=../../store/"+newStore)
	return []string{"adapters", "outageClients", "go.mod"}
}

func TestProcedures(t *testing.T) {
	top, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	copyTree(t, top, tree)

	named := map[string][]string{
		"Adding an algorithm": addAlgorithm(t, tree),
		"Adding a store":      addStore(t, tree),
	}
	for title, names := range named {
		text := procedure(t, tree, title)
		for _, n := range names {
			if !strings.Contains(text, n) {
				t.Errorf("docs/design.md's %q does not name %s, which this test edits to follow it: name it, or drop the step here", title, n)
			}
		}
	}
	if t.Failed() {
		return
	}

	// The Redis tests start their own redis-server (testkit/redistest).
	// What the copy imports from the module cache is compiled as for
	// the tree itself (the build cache has it); only the tree's packages
	// are compiled again, in the copy's directory.
	env := []string{"RAPID_CHECKS=3", "RAPID_STEPS=10", "RATEKIT_CONTENTION=5"}

	// make test runs the new store on every server of the matrix.
	mk := filepath.Join(t.TempDir(), "print.mk")
	if err := os.WriteFile(mk, []byte("print-server-modules:\n\t@echo $(SERVER_MODULES)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run(t, tree, nil, "make", "-s", "--no-print-directory", "-f", "Makefile", "-f", mk, "print-server-modules"); !slices.Contains(strings.Fields(out), "store/"+newStore) {
		t.Errorf("the Makefile's SERVER_MODULES (%s) leaves out store/%s", strings.TrimSpace(out), newStore)
	}

	// The tests that enumerate the algorithms (in the root module, every
	// package that imports the registry) and the stores (faulttest's
	// client lists and its contention test, on every algorithm and
	// store), and the copies' own.
	out := run(t, tree, env, "go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	var pkgs []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && slices.Contains(f[1:], "github.com/ratekit/ratekit/algorithms") {
			pkgs = append(pkgs, f[0])
		}
	}
	pkgs = append(pkgs, "./algorithms/"+newAlg)
	start := time.Now()
	// TestSuiteCatchesBrokenStores checks the conformance suite against
	// stores broken on purpose, not the registry: which of its checks
	// catches a broken store first depends on rapid's draws, and at few
	// checks it is not always the one it expects (8 of 30 runs at
	// RAPID_CHECKS=3 on 2026-12-06). The suite itself runs on the copy.
	run(t, tree, env, "go", append([]string{"test", "-count=1", "-skip", "^TestSuiteCatchesBrokenStores$"}, pkgs...)...)
	run(t, filepath.Join(tree, "store", newStore), env, "go", "test", "-count=1", "./...")
	run(t, filepath.Join(tree, "testkit", "faulttest"), env, "go", "test", "-count=1", "-run", "^(TestEveryStoreHasAClient|TestContention)$", ".")
	t.Logf("tested in %v", time.Since(start))
}
