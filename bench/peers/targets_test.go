package main

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/algorithms/slidinglog"
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

// The open configuration takes every count as big as New accepts: big,
// or the sliding log's MaxLimit, found by bisection.
func TestOpenParams(t *testing.T) {
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tests := []struct {
		give string
		want algorithms.Params
	}{
		{"tokenbucket", algorithms.Params{"capacity": big, "refill_rate": big, "refill_interval": int64(time.Second), "carry": 0}},
		{"slidinglog", algorithms.Params{"limit": slidinglog.MaxLimit, "window": int64(time.Second)}},
	}
	for _, tt := range tests {
		a, ok := algorithms.Lookup(tt.give)
		if !ok {
			t.Fatalf("algorithms.Lookup(%q) found nothing", tt.give)
		}
		if got, err := openParams(a, store); err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("openParams(%s) = %v, %v; want %v", tt.give, got, err, tt.want)
		}
	}
}

// An algorithm whose New takes no open configuration stops the benchmark,
// by name.
func TestOpenParamsRefused(t *testing.T) {
	store, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// Not one of All: its New refuses every configuration.
	a := algorithms.Algorithm{Name: "madeup", Params: algorithms.All[0].Params}
	if p, err := openParams(a, store); err == nil || !strings.Contains(err.Error(), "madeup") {
		t.Fatalf("openParams(an algorithm New refuses) = %v, %v; want an error naming it", p, err)
	}
}
