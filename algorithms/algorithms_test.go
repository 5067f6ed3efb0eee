package algorithms_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/engine"
	"github.com/ratekit/ratekit/store/memory"
)

// notRates are the folders here with a step that are not rate algorithms,
// and so not in All (see the package doc).
var notRates = []string{"concurrency"}

// TestEveryStepIsListed: every folder here with a step (a .lua file of its
// own, not under testdata) is an entry of All, and every entry has one,
// but for notRates.
func TestEveryStepIsListed(t *testing.T) {
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var withStep []string
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		lua, err := filepath.Glob(filepath.Join(d.Name(), "*.lua"))
		if err != nil {
			t.Fatal(err)
		}
		if len(lua) > 0 && !slices.Contains(notRates, d.Name()) {
			withStep = append(withStep, d.Name())
		}
	}
	if len(withStep) == 0 {
		t.Fatal("no algorithm folder found: is the test running in algorithms/?")
	}
	names := algorithms.Names()
	for _, d := range withStep {
		if !slices.Contains(names, d) {
			t.Errorf("algorithms/%s has a step but is not in algorithms.All: add its line to algorithms.go", d)
		}
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(n, n+".lua")); err != nil {
			t.Errorf("algorithms.All lists %s, which has no step algorithms/%s/%s.lua: %v", n, n, n, err)
		}
	}
	for _, n := range notRates {
		if _, err := os.Stat(filepath.Join(n, n+".lua")); err != nil || slices.Contains(names, n) {
			t.Errorf("notRates lists %s, which has no step or is in All (%v)", n, err)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("%s is listed twice", n)
		}
		seen[n] = true
	}
}

func newStore(t *testing.T) (*memory.Store, *fakeclock.Clock) {
	t.Helper()
	clock := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clock
}

// TestEntries builds every algorithm through the registry and checks that
// each parameter reaches the Config field it names.
func TestEntries(t *testing.T) {
	store, clock := newStore(t)
	ctx := context.Background()
	for _, a := range algorithms.All {
		t.Run(a.Name, func(t *testing.T) {
			if a.Title == "" || a.Doc == "" || a.Unit == "" || a.Remaining == "" || len(a.Params) == 0 {
				t.Fatalf("incomplete entry: %+v", a)
			}
			limits := 0
			for _, p := range a.Params {
				if p.Limit {
					limits++
				}
				switch {
				case p.Kind == algorithms.Choice && (p.Default < 0 || p.Default >= int64(len(p.Choices())) || len(p.Choices()) < 2):
					t.Errorf("%s: default %d of choices %q", p.Name, p.Default, p.Choices())
				case p.Kind != algorithms.Choice && (p.Default <= 0 || p.Kind == algorithms.Duration && time.Duration(p.Default)%time.Microsecond != 0):
					t.Errorf("%s: default %d", p.Name, p.Default)
				case p.Kind != algorithms.Choice && p.Choices() != nil:
					t.Errorf("%s: a %v with choices %q", p.Name, p.Kind, p.Choices())
				}
			}
			if limits != 1 || !a.Limit().Limit {
				t.Fatalf("%d limit parameters, want 1", limits)
			}
			if got, ok := algorithms.Lookup(a.Name); !ok || got.Name != a.Name {
				t.Fatalf("Lookup(%q) = %v, %v", a.Name, got.Name, ok)
			}

			// The defaults build a limiter whose Limit is the limit's default.
			l, err := a.New(store, a.Defaults(), clock, "reg:"+a.Name+":")
			if err != nil {
				t.Fatalf("defaults %v: %v", a.Defaults(), err)
			}
			if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed || d.Limit != a.Limit().Default || d.Window <= 0 {
				t.Fatalf("Allow with the defaults: %+v, %v; want allowed with Limit %d, and a Window", d, err, a.Limit().Default)
			}
			// Its step declares the guarantee the conformance suite checks.
			if s := engine.Of(l).Limits()[0].Spec; s.Bound == nil {
				t.Errorf("%s's engine.Spec declares no Bound: the conformance suite cannot check it", a.Name)
			}

			// Distinct values, one per parameter, reach the script: each
			// count as is, each duration in µs, each choice its last value
			// (1); the limit is the Limit.
			p := algorithms.Params{}
			var want []int64
			for i, prm := range a.Params {
				v := int64(i + 2)
				switch prm.Kind {
				case algorithms.Duration:
					p[prm.Name] = int64(time.Duration(v) * time.Second)
					want = append(want, v*1e6)
				case algorithms.Choice:
					p[prm.Name] = int64(len(prm.Choices()) - 1)
					want = append(want, p[prm.Name])
				default:
					p[prm.Name] = v
					want = append(want, v)
				}
			}
			l, err = a.New(store, p, clock, "reg2:")
			if err != nil {
				t.Fatalf("%v: %v", p, err)
			}
			c, err := engine.Of(l).Call("k", 1)
			if err != nil {
				t.Fatal(err)
			}
			if c.Script.Name() != a.Name {
				t.Errorf("script %q, want the registry's name %q", c.Script.Name(), a.Name)
			}
			if !strings.HasPrefix(c.Keys[0], "reg2:") {
				t.Errorf("key %q is not under the prefix given", c.Keys[0])
			}
			if c.Args[0] != clock.Now().UnixMicro() {
				t.Errorf("time argument %d, want the clock's %d", c.Args[0], clock.Now().UnixMicro())
			}
			// Scheduled parameters (a calendar window's start) are 0 in a
			// limiter without a schedule; every configured value here is not.
			// ARGV = now, mode, the parameters, n.
			params := c.Args[2 : len(c.Args)-1]
			got := slices.DeleteFunc(slices.Clone(params), func(v int64) bool { return v == 0 })
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("script parameters %v, want %v in some order", params, want)
			}
			if d, err := l.Peek(ctx, "k"); err != nil || d.Limit != p[a.Limit().Name] {
				t.Errorf("Peek: %+v, %v; want Limit %d", d, err, p[a.Limit().Name])
			}
			// Without a clock, the store's time (-1 in the call).
			l, err = a.New(store, a.Defaults(), nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if c, err := engine.Of(l).Call("k", 1); err != nil || c.Args[0] != -1 {
				t.Errorf("no clock: call %v, %v; want time -1", c.Args, err)
			}

			// Each parameter reaches its field: a bad value is refused
			// naming the field.
			for _, prm := range a.Params {
				bad := a.Defaults()
				bad[prm.Name] = 0
				if prm.Kind == algorithms.Choice {
					bad[prm.Name] = int64(len(prm.Choices()))
				}
				if _, err := a.New(store, bad, clock, ""); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), prm.Field) {
					t.Errorf("%s = 0: %v, want ErrInvalidConfig naming %s", prm.Name, err, prm.Field)
				}
				missing := a.Defaults()
				delete(missing, prm.Name)
				if prm.Kind == algorithms.Choice {
					// A Choice left out is 0, its Config field's zero value.
					zero := a.Defaults()
					zero[prm.Name] = 0
					got, err := a.NewParams(missing)
					want, _ := a.NewParams(zero)
					if err != nil || got != want {
						t.Errorf("without %s: %v, %v; want the parameters with %s = 0, %v", prm.Name, got, err, prm.Name, want)
					}
					continue
				}
				if _, err := a.New(store, missing, clock, ""); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), prm.Name) {
					t.Errorf("without %s: %v, want ErrInvalidConfig naming it", prm.Name, err)
				}
			}
			extra := a.Defaults()
			extra["nope"] = 1
			if _, err := a.New(store, extra, clock, ""); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "nope") {
				t.Errorf("unknown parameter: %v", err)
			}
			if _, err := a.New(store, a.Defaults(), clock, "{"); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "Prefix") {
				t.Errorf("bad prefix: %v", err)
			}
			if _, err := a.New(nil, a.Defaults(), clock, ""); !errors.Is(err, core.ErrInvalidConfig) {
				t.Errorf("nil runner: %v", err)
			}
			// A clock that reads a time ratekit cannot compute with is
			// refused when the limiter is built, not met with a panic at
			// its first call: a nil *fakeclock.Clock reads the zero time.
			for name, c := range map[string]core.Clock{
				"a nil *fakeclock.Clock": (*fakeclock.Clock)(nil),
				"a nil core.ClockFunc":   core.ClockFunc(nil),
				"a clock in 1969":        fakeclock.New(time.Unix(-1, 0)),
			} {
				if l, err := a.New(store, a.Defaults(), c, ""); !errors.Is(err, core.ErrInvalidConfig) || l != nil {
					t.Errorf("%s as Clock: %v, %v; want ErrInvalidConfig", name, l, err)
				}
			}
		})
	}
	if _, ok := algorithms.Lookup("nope"); ok {
		t.Error(`Lookup("nope") found something`)
	}
}

// The parameter names are the Config fields in snake case, and stay what
// they are: pinned here for these algorithms (Example prints every
// algorithm's, a new one's too).
func TestParamNames(t *testing.T) {
	want := []string{
		"tokenbucket.capacity=Capacity:count", "tokenbucket.refill_rate=RefillRate:count", "tokenbucket.refill_interval=RefillInterval:duration", "tokenbucket.carry=Carry:choice",
		"fixedwindow.limit=Limit:count", "fixedwindow.window=Window:duration", "fixedwindow.aligned=Aligned:choice",
		"slidinglog.limit=Limit:count", "slidinglog.window=Window:duration",
		"slidingcounter.limit=Limit:count", "slidingcounter.window=Window:duration",
		"leakybucket.capacity=Capacity:count", "leakybucket.leak_rate=LeakRate:count", "leakybucket.per=Per:duration", "leakybucket.carry=Carry:choice",
		"gcra.rate=Rate:count", "gcra.period=Period:duration", "gcra.burst=Burst:count", "gcra.carry=Carry:choice",
	}
	pinned := map[string]bool{}
	for _, w := range want {
		pinned[w[:strings.IndexByte(w, '.')]] = true
	}
	var got []string
	for _, a := range algorithms.All {
		for _, p := range a.Params {
			if pinned[a.Name] {
				got = append(got, a.Name+"."+p.Name+"="+p.Field+":"+p.Kind.String())
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("parameters:\n got  %q\n want %q", got, want)
	}
}

// TestLayering: the registry sits above the algorithm packages. Nothing
// it builds on (the algorithm packages, the root package, core, the
// stores, internal code outside the test kits, fakeclock) imports it.
func TestLayering(t *testing.T) {
	const self = "github.com/ratekit/ratekit/algorithms"
	below := []string{"..", "../core", "../fakeclock", "../internal", "../store"}
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() {
			below = append(below, d.Name())
		}
	}
	fset := token.NewFileSet()
	for _, root := range below {
		recurse := root != ".."
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if p != root && (!recurse || d.Name() == "testdata" || filepath.ToSlash(p) == "../testkit") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); path == self {
					t.Errorf("%s imports %s, which sits above it", p, self)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// An Algorithm that is not one of All (the zero one Lookup returns for an
// unknown name, or one built by hand) builds nothing: New returns an
// error wrapping core.ErrInvalidConfig, and Limit the zero Param.
func TestZeroAlgorithm(t *testing.T) {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	unknown, ok := algorithms.Lookup("nope")
	if ok {
		t.Fatal("Lookup found nope")
	}
	custom := algorithms.Algorithm{Name: "custom", Params: algorithms.All[0].Params}
	for _, a := range []algorithms.Algorithm{unknown, custom} {
		l, err := a.New(s, a.Defaults(), nil, "")
		if !errors.Is(err, core.ErrInvalidConfig) || l != nil {
			t.Errorf("%q.New: %v, %v; want ErrInvalidConfig", a.Name, l, err)
		}
	}
	if p := unknown.Limit(); p != (algorithms.Param{}) {
		t.Errorf("the zero Algorithm's Limit: %+v", p)
	}
}
