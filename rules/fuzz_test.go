package rules_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// FuzzParse: any bytes parse into a Config or an error wrapping
// ErrConfig, never a panic, and a Config decides any descriptor of its
// domains.
func FuzzParse(f *testing.F) {
	names, err := filepath.Glob(filepath.Join("testdata", "envoy", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(extrasConfig))
	f.Add([]byte(alsoConfig))
	store, err := memory.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := rules.Parse([]rules.File{{Name: "f.yaml", Data: data}}, rules.LoadOptions{})
		if err != nil {
			if !errors.Is(err, rules.ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		r, err := rules.New(store, cfg, rules.Options{})
		if err != nil {
			return // a rule the options refuse
		}
		for _, d := range cfg.Domains() {
			ds := []rules.Descriptor{{Entries: []rules.Entry{{Key: "key1", Value: "value1"}}}, {Entries: []rules.Entry{{Key: "k", Value: "v"}, {Key: "x", Value: "y"}}}}
			if _, err := r.Decide(context.Background(), d, ds, 1); err != nil && !errors.Is(err, rules.ErrRequest) {
				t.Fatalf("Decide(%q): %v", d, err)
			}
		}
	})
}
