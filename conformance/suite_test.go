package conformance

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	registry "github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/store/memory"
)

// The suite checks exactly the algorithms of the registry: each has a
// draw, and no draw is for an algorithm the registry does not have.
func TestSuiteIsTheRegistry(t *testing.T) {
	if len(suite) != len(registry.All) {
		t.Fatalf("suite has %d algorithms, the registry %d", len(suite), len(registry.All))
	}
	for i, a := range suite {
		if a.name != registry.All[i].Name || a.draw == nil {
			t.Errorf("suite[%d] = %q (draw %v), registry %q", i, a.name, a.draw != nil, registry.All[i].Name)
		}
	}
	for name := range draws {
		if _, ok := registry.Lookup(name); !ok {
			t.Errorf("a draw for %q, which is not in algorithms.All", name)
		}
	}
	if len(drawable) != len(suite) {
		t.Errorf("%d of %d algorithms can be drawn", len(drawable), len(suite))
	}
}

// TestNoDrawChild runs the suite with one algorithm's draw removed, when
// TestMissingDrawFails asks for it (in a child process, since it must fail).
func TestNoDrawChild(t *testing.T) {
	name := os.Getenv("CONFORMANCE_NO_DRAW")
	if name == "" {
		t.Skip("run by TestMissingDrawFails")
	}
	for i := range suite {
		if suite[i].name == name {
			suite[i].draw = nil
		}
	}
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	Run(t, Harness{Runner: s})
}

// An algorithm of the registry that the suite cannot draw fails the suite,
// by name, instead of passing unchecked.
func TestMissingDrawFails(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoDrawChild$/^gcra$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "CONFORMANCE_NO_DRAW=gcra")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the suite passed an algorithm it has no draw for:\n%s", out)
	}
	if !strings.Contains(string(out), `--- FAIL: TestNoDrawChild/gcra`) || !strings.Contains(string(out), `"gcra" (algorithms.All) has no draw`) {
		t.Fatalf("the suite failed, but not by naming the algorithm without a draw:\n%s", out)
	}
}
