package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/store/memory"
)

// Every algorithm of the registry is measured, open never denies and
// tight denies after a key's first request.
func TestAlgos(t *testing.T) {
	list, err := ratekitAlgos()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(algorithms.All) {
		t.Fatalf("%d algorithms measured, %d in the registry", len(list), len(algorithms.All))
	}
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	for i, a := range list {
		if a.name != algorithms.All[i].Name {
			t.Errorf("algorithm %d is %s, the registry's %s", i, a.name, algorithms.All[i].Name)
		}
		open, err := a.open(store, "t:"+a.name+":open:")
		if err != nil {
			t.Fatalf("%s open: %v", a.name, err)
		}
		tight, err := a.tight(store, "t:"+a.name+":tight:")
		if err != nil {
			t.Fatalf("%s tight: %v", a.name, err)
		}
		for j := 0; j < 100; j++ {
			if d, err := open.Allow(ctx, "k"); err != nil || !d.Allowed {
				t.Fatalf("%s open: request %d: %+v, %v", a.name, j, d, err)
			}
		}
		for j, want := range []bool{true, false, false} {
			if d, err := tight.Allow(ctx, "k"); err != nil || d.Allowed != want {
				t.Fatalf("%s tight: request %d: %+v, %v; want allowed %v", a.name, j, d, err, want)
			}
		}
	}
}

// An algorithm of the registry with no open configuration stops the
// benchmark, by name.
func TestAlgosMissing(t *testing.T) {
	name := algorithms.All[len(algorithms.All)-1].Name
	saved := openParams[name]
	delete(openParams, name)
	defer func() { openParams[name] = saved }()
	if _, err := ratekitAlgos(); err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("ratekitAlgos without %s: %v", name, err)
	}
}
