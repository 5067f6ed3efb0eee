package rules_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// dotDir is a configuration directory with a file, a dot file and a dot
// directory, each a domain of its own.
func dotDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, domain := range map[string]string{"a.yaml": "a", ".b.yaml": "b", ".hidden/c.yaml": "c"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(limitYAML(domain, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// LoadOptions.IncludeDotFiles: names that begin with '.' are skipped by
// default, files and directories, and read with it.
func TestLoadIncludeDotFiles(t *testing.T) {
	dir := dotDir(t)
	for _, tt := range []struct {
		include bool
		want    []string
	}{{false, []string{"a"}}, {true, []string{"a", "b", "c"}}} {
		cfg, err := rules.Load(dir, rules.LoadOptions{IncludeDotFiles: tt.include})
		if err != nil {
			t.Fatalf("IncludeDotFiles %t: %v", tt.include, err)
		}
		got := cfg.Domains()
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("IncludeDotFiles %t: domains %v, want %v", tt.include, got, tt.want)
		}
	}
}

// Watch reads what Load reads: with IncludeDotFiles, a dot file's
// change is loaded.
func TestWatchIncludeDotFiles(t *testing.T) {
	dir := dotDir(t)
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := rules.New(store, nil, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- r.Watch(ctx, dir, rules.WatchOptions{LoadOptions: rules.LoadOptions{IncludeDotFiles: true}, Interval: 5 * time.Millisecond})
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, "the first load", func() bool { return r.Config() != nil })
	if got := rpu(r, "b"); got != 1 {
		t.Fatalf("dot file's domain b: requests_per_unit %d, want 1", got)
	}
	if err := os.WriteFile(filepath.Join(dir, ".b.yaml"), []byte(limitYAML("b", 7)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the dot file's change", func() bool { return rpu(r, "b") == 7 })
}
