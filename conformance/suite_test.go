package conformance

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	registry "github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/store/memory"
)

// The suite checks exactly the algorithms of the registry, in its order,
// and can check each: its limiter builds and declares a bound.
func TestSuiteIsTheRegistry(t *testing.T) {
	if len(suite) != len(registry.All) {
		t.Fatalf("suite has %d algorithms, the registry %d", len(suite), len(registry.All))
	}
	for i, a := range suite {
		if a.name != registry.All[i].Name || a.unchecked() != "" {
			t.Errorf("suite[%d] = %q (%s), registry %q", i, a.name, a.unchecked(), registry.All[i].Name)
		}
	}
	if len(drawable) != len(suite) {
		t.Errorf("%d of %d algorithms can be drawn", len(drawable), len(suite))
	}
}

// TestNoBoundChild runs the suite with one algorithm's Bound removed from
// its Spec, when TestMissingBoundFails asks for it (in a child process,
// since it must fail).
func TestNoBoundChild(t *testing.T) {
	name := os.Getenv("CONFORMANCE_NO_BOUND")
	if name == "" {
		t.Skip("run by TestMissingBoundFails")
	}
	for i := range suite {
		if suite[i].name == name {
			s := *suite[i].spec
			s.Bound = nil
			suite[i].spec = &s
		}
	}
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	Run(t, Harness{Runner: s})
}

// An algorithm of the registry that declares no bound fails the suite, by
// name, instead of passing unchecked.
func TestMissingBoundFails(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoBoundChild$/^gcra$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CONFORMANCE_NO_BOUND=gcra")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed an algorithm without a bound:\n%s", out)
	}
	if !strings.Contains(string(out), `--- FAIL: TestNoBoundChild/gcra`) || !strings.Contains(string(out), `"gcra" (algorithms.All) cannot be checked: its engine.Spec declares no Bound`) {
		t.Fatalf("the suite failed, but not by naming the algorithm without a bound:\n%s", out)
	}
}
