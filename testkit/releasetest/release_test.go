package releasetest

import (
	"bytes"
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"

	"github.com/ratekit/ratekit/testkit/redistest"
)

// version is the version the tests release: any that make release takes.
const version = "v0.999.0"

// ratekit is the root module's path; the other modules are below it.
const ratekit = "github.com/ratekit/ratekit"

// The release step, then the modules as a user gets them: make release
// in a copy of the repository; a file-based module proxy serving every tag
// it prints (the .info, .mod and .zip a proxy serves for a tag); then fresh
// modules with no replace directive: one per nested module, asked for
// alone, which must bring the root at the same version; and one that
// requires every library module, loads every public package of each (go
// list: every import resolves in the modules at that version), and builds
// and runs a program on a real redis-server: a decision on the memory store
// and on go-redis. Only that program is compiled: building gRPC,
// OpenTelemetry and every client in a fresh module cache would take
// minutes. Third-party modules come from the module cache or the proxy the
// environment names; the checksum database is not asked about ratekit's
// modules, which it has never seen.
func TestReleasedModules(t *testing.T) {
	goBin := lookPath(t, "go")
	tree := copyRepository(t)

	out := release(t, tree, version)
	if err := out.err; err != nil {
		t.Fatalf("make release VERSION=%s: %v\n%s", version, err, out.stderr)
	}
	tags := printed(t, out.stdout)
	if want := libraryTags(t, tree); !slices.Equal(tags, want) {
		t.Fatalf("make release printed the tags %q, want %q (the root's, then <dir>/%s for each other library module)", tags, want, version)
	}
	checkRequirements(t, tree)

	proxy := filepath.Join(t.TempDir(), "proxy")
	var paths []string
	for _, tag := range tags {
		dir := strings.TrimSuffix(strings.TrimSuffix(tag, version), "/")
		path := ratekit
		if dir != "" {
			path += "/" + dir
		}
		publish(t, proxy, filepath.Join(tree, filepath.FromSlash(dir)), path)
		paths = append(paths, path)
	}

	app := t.TempDir()
	writeFile(t, filepath.Join(app, "go.mod"), "module example.com/app\n\ngo 1.26.0\n")
	src, err := os.ReadFile(filepath.Join("testdata", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(app, "main.go"), string(src))
	var imports []string
	for _, tag := range tags {
		imports = append(imports, publicPackages(t, tree, strings.TrimSuffix(strings.TrimSuffix(tag, version), "/"))...)
	}
	writeFile(t, filepath.Join(app, "all.go"), "//go:build ratekit_all\n\npackage main\n\nimport (\n\t_ \""+strings.Join(imports, "\"\n\t_ \"")+"\"\n)\n")
	sums := knownSums(t, tree, tags)
	writeFile(t, filepath.Join(app, "go.sum"), sums)
	env := goEnv(t, goBin, proxy)
	// Each other module alone, as a user who asks for one gets it: the root
	// comes in by its requirement, at the released version too.
	for _, p := range paths {
		if p == ratekit {
			continue
		}
		alone := t.TempDir()
		writeFile(t, filepath.Join(alone, "go.mod"), "module example.com/alone\n\ngo 1.26.0\n")
		writeFile(t, filepath.Join(alone, "go.sum"), sums)
		run(t, alone, env, goBin, "get", p+"@"+version)
		if got := strings.TrimSpace(run(t, alone, env, goBin, "list", "-m", "-f", "{{.Version}}", ratekit)); got != version {
			t.Errorf("go get %s@%s alone selects %s %s, want %s", p, version, ratekit, got, version)
		}
	}
	get := []string{"get"}
	for _, p := range paths {
		get = append(get, p+"@"+version)
	}
	run(t, app, env, goBin, get...)
	run(t, app, env, goBin, "mod", "tidy")
	mod, err := os.ReadFile(filepath.Join(app, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?m)^replace\b`).Match(mod) {
		t.Fatalf("the program's go.mod has a replace directive:\n%s", mod)
	}
	list := run(t, app, env, goBin, "list", "-m", "-f", "{{.Path}} {{.Version}} {{.Replace}}", "all")
	for _, p := range paths {
		if want := p + " " + version + " <nil>"; !slices.Contains(strings.Split(list, "\n"), want) {
			t.Errorf("go list -m all has no %q (the module at the released version, not replaced):\n%s", want, list)
		}
	}
	// Only the stores' tests used these (testkit/miniredistest).
	for _, p := range []string{"github.com/alicebob/miniredis/v2", "github.com/yuin/gopher-lua"} {
		if strings.Contains(list, p+" ") {
			t.Errorf("a program that imports every ratekit module carries %s, which no ratekit package imports:\n%s", p, list)
		}
	}
	loaded := strings.Split(run(t, app, env, goBin, "list", "-tags", "ratekit_all", "-deps", "."), "\n")
	for _, p := range imports {
		if !slices.Contains(loaded, p) {
			t.Errorf("go list -deps did not load %s", p)
		}
	}
	run(t, app, env, goBin, "build", "-o", "prog", ".")

	srv := redistest.Start(t)
	got := run(t, app, nil, filepath.Join(app, "prog"), srv.Addr)
	if want := "memory true goredis true\nmemory false goredis false\n"; got != want {
		t.Errorf("the program printed\n%s\nwant\n%s", got, want)
	}
	if n, err := redistest.Command(srv.Addr, "DBSIZE"); err != nil || n == "0" {
		t.Errorf("DBSIZE after the program = %q, %v; want the go-redis limiter's key", n, err)
	}
}

// make release refuses a version Go cannot publish for these modules, with
// a message that says why, and changes nothing.
func TestReleaseRefuses(t *testing.T) {
	tree := copyRepository(t)
	before := snapshot(t, tree)
	tests := []struct {
		give string
		want string // in the error
	}{
		{"", "say which version"},
		{"1.2.3", "not a semantic version"},
		{"v0.2", "not a semantic version"},
		{"v0.02.0", "not a semantic version"},
		{"v0.2.0+build.1", "no +build suffix"},
		{"v0.2.0-rc.01", "not a semantic version"},
		{"v2.0.0", "/v2"},
		{"v12.1.0", "/v12"},
		{"v0.2.0 v0.3.0", "not a semantic version"},
	}
	for _, tt := range tests {
		out := release(t, tree, tt.give)
		if out.err == nil || !strings.Contains(out.stderr, tt.want) {
			t.Errorf("make release VERSION=%q: %v, stderr %q; want a failure saying %q", tt.give, out.err, out.stderr, tt.want)
		}
	}
	if after := snapshot(t, tree); !maps.Equal(before, after) {
		t.Error("a refused make release changed a go.mod")
	}
	// A prerelease is a version like any other.
	if out := release(t, tree, "v1.2.3-rc.1"); out.err != nil {
		t.Errorf("make release VERSION=v1.2.3-rc.1: %v\n%s", out.err, out.stderr)
	}
}

// result is what a command printed and how it ended.
type result struct {
	stdout, stderr string
	err            error
}

// release runs make release VERSION=v in tree, outside any git repository
// (a tag check would otherwise look at the one around it).
func release(t *testing.T, tree, v string) result {
	t.Helper()
	cmd := exec.Command(lookPath(t, "make"), "-s", "release", "VERSION="+v)
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(tree), "MAKEFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{stdout.String(), stderr.String(), err}
}

// printed returns the tags make release printed (its "git tag" lines),
// checking that its "git push" line names the same.
func printed(t *testing.T, out string) []string {
	t.Helper()
	var tags, pushed []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "git" && f[1] == "tag":
			tags = append(tags, f[2])
		case len(f) > 3 && f[0] == "git" && f[1] == "push" && f[2] == "origin":
			pushed = f[3:]
		}
	}
	if len(tags) == 0 || !slices.Equal(tags, pushed) {
		t.Fatalf("make release printed the tags %q and pushes %q; want the same, at least one:\n%s", tags, pushed, out)
	}
	return tags
}

// libraryTags returns the tags a release must push: the version for the
// root module and <dir>/version for each module a program can import (all
// but those under cmd/, bench/ and testkit/), sorted as make lists them.
func libraryTags(t *testing.T, tree string) []string {
	t.Helper()
	var dirs []string
	for _, dir := range moduleDirs(t, tree) {
		if dir == "." {
			dirs = append(dirs, "")
			continue
		}
		top, _, _ := strings.Cut(dir, "/")
		if top != "cmd" && top != "bench" && top != "testkit" {
			dirs = append(dirs, dir)
		}
	}
	slices.Sort(dirs)
	var tags []string
	for _, d := range dirs {
		if d == "" {
			tags = append(tags, version)
		} else {
			tags = append(tags, d+"/"+version)
		}
	}
	return tags
}

// moduleDirs returns the directories of tree, slash-separated and relative
// to it ("." for the root), that hold a go.mod.
func moduleDirs(t *testing.T, tree string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			rel, err := filepath.Rel(tree, filepath.Dir(p))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// publicPackages returns the import paths of the packages of the module in
// dir (slash-separated, relative to tree) that a program can import: all
// but internal ones, commands, and those of nested modules and testdata.
func publicPackages(t *testing.T, tree, dir string) []string {
	t.Helper()
	root := filepath.Join(tree, filepath.FromSlash(dir))
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if p != root {
			if name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		pkg, err := build.ImportDir(p, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) || (err == nil && pkg.Name == "main") {
			return nil
		} else if err != nil {
			return err
		}
		rel, err := filepath.Rel(tree, p)
		if err != nil {
			return err
		}
		out = append(out, ratekit+strings.TrimPrefix("/"+filepath.ToSlash(rel), "/."))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no package found in the module at %s", root)
	}
	return out
}

// checkRequirements checks that every go.mod of tree requires ratekit's
// modules at version and still replaces them by their directories.
func checkRequirements(t *testing.T, tree string) {
	t.Helper()
	req := regexp.MustCompile(`(?m)^\s*(?:require\s+)?(` + regexp.QuoteMeta(ratekit) + `(?:/\S+)?)\s+(v\S+)`)
	for _, dir := range moduleDirs(t, tree) {
		mod, err := os.ReadFile(filepath.Join(tree, dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range req.FindAllStringSubmatch(string(mod), -1) {
			if m[2] != version {
				t.Errorf("after make release, %s/go.mod requires %s %s, want %s", dir, m[1], m[2], version)
			}
			if !strings.Contains(string(mod), m[1]+" => ") {
				t.Errorf("after make release, %s/go.mod no longer replaces %s", dir, m[1])
			}
		}
	}
}

// publish adds module path at version, from dir, to the file-based proxy
// at root: the layout GOPROXY=file://root reads ($path/@v/list, .info,
// .mod, .zip). The zip is made as the go command makes one for a tag: the
// files of nested modules and VCS directories left out, its restrictions
// on names and sizes checked.
func publish(t *testing.T, root, dir, path string) {
	t.Helper()
	escPath, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(root, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(at, "list"), version+"\n")
	writeFile(t, filepath.Join(at, escVersion+".info"), fmt.Sprintf("{\"Version\":%q,\"Time\":%q}\n", version, time.Now().UTC().Format(time.RFC3339)))
	writeFile(t, filepath.Join(at, escVersion+".mod"), string(mod))
	f, err := os.Create(filepath.Join(at, escVersion+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := zip.CreateFromDir(f, module.Version{Path: path, Version: version}, dir); err != nil {
		t.Fatalf("the module zip of %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// knownSums returns the lines of the released modules' go.sum files: the
// checksums of the third-party modules they require, already verified
// when they were written there, so that the go command need not ask the
// checksum database for them again. go mod tidy keeps those the program
// needs.
func knownSums(t *testing.T, tree string, tags []string) string {
	t.Helper()
	var lines []string
	for _, tag := range tags {
		dir := strings.TrimSuffix(strings.TrimSuffix(tag, version), "/")
		b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(dir), "go.sum"))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	slices.Sort(lines)
	return strings.Join(slices.Compact(lines), "\n") + "\n"
}

// goEnv returns the environment of the go commands run in the program's
// module: ratekit's modules from the file proxy at proxy, then the module
// cache's own download directory (a proxy too), then the proxy the
// environment names; a module cache of the test's own, so that no version
// of ratekit published here outlives it; no replace, vendor or workspace.
func goEnv(t *testing.T, goBin, proxy string) []string {
	t.Helper()
	cache := strings.TrimSpace(run(t, ".", nil, goBin, "env", "GOMODCACHE"))
	upstream := strings.TrimSpace(run(t, ".", nil, goBin, "env", "GOPROXY"))
	return append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(cache, "cache", "download"))+","+upstream,
		"GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"),
		// -modcacherw: t.TempDir can remove the module cache.
		"GOFLAGS=-mod=mod -modcacherw",
		"GONOSUMDB="+ratekit,
		"GOPRIVATE=",
		"GONOPROXY=",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	)
}

// copyRepository copies the repository (the files git tracks or would
// track, when it is a git checkout; else every file but .git) to a new
// directory and returns it.
func copyRepository(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(t.TempDir(), "ratekit")
	var files []string
	if out, err := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output(); err == nil {
		files = strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	} else {
		err := filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Name() == ".git" {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() {
				rel, err := filepath.Rel(repo, p)
				if err != nil {
					return err
				}
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range files {
		src := filepath.Join(repo, rel)
		info, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked, deleted in the work tree
		} else if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(tree, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(tree, "Makefile")); err != nil {
		t.Fatalf("the copy of %s has no Makefile: %v", repo, err)
	}
	return tree
}

// snapshot returns every go.mod of tree by its directory.
func snapshot(t *testing.T, tree string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, dir := range moduleDirs(t, tree) {
		b, err := os.ReadFile(filepath.Join(tree, dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		out[dir] = string(b)
	}
	return out
}

// run runs name with args in dir (env nil: the test's environment), logs
// how long it took, and returns its standard output; it fails t, with
// everything the command printed, if the command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %.60s: %v", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s%s", filepath.Base(name), strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// lookPath returns the path of the command name, failing t without it.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found on PATH: %v (the release test runs make release and the go command)", name, err)
	}
	return p
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
