// Package algorithms is the list of ratekit's algorithms: All holds one
// entry per algorithm package below this directory, in a fixed order, with
// its name, a short description, its parameters (with defaults, for a UI)
// and a constructor that takes the parameters by name.
//
// Everything that offers every algorithm reads this list: the demo, the
// conformance suite, the fault and fuzz tests and the benchmarks. Adding an
// algorithm is its folder (algorithms/<name>: its step, its Go twin and
// the guarantee the conformance suite checks, declared together) and one
// line in All; a test fails while a folder with a step is missing from
// the list.
//
// A parameter is a field of the package's Config, named in snake case
// ("refill_interval" for RefillInterval): Config's fields other than
// Prefix and Clock are read from the Config type itself, so the list can
// never disagree with the packages. Code that knows which algorithm it
// wants should call that package's New with its Config; this package is for
// code that picks an algorithm by name.
//
// The concurrency limiter (algorithms/concurrency) is not in All: it caps
// the requests in flight with leases instead of deciding how often, has no
// Allow, and so is not a core.Limiter that code picking a rate algorithm
// by name could use.
//
// This package imports every algorithm package; none of them, nor any
// package they use, imports it.
package algorithms

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/gcra"
	"github.com/ratekit/ratekit/algorithms/leakybucket"
	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/algorithms/slidinglog"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
)

// All is every algorithm, in the order UIs and tests list them; treat it
// as read-only. Each entry's defaults are a small limit over a few
// seconds, to watch in the demo.
var All = []Algorithm{
	define(tokenbucket.New, tokenbucket.NewParams, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: 2 * time.Second}, about{
		limit: "Capacity", title: "Token bucket", unit: "tokens", remaining: "tokens in the bucket",
		doc: "bursts of up to Capacity tokens; RefillRate tokens come back at the end of every whole RefillInterval"}),
	define(fixedwindow.New, fixedwindow.NewParams, fixedwindow.Config{Limit: 5, Window: 10 * time.Second}, about{
		limit: "Limit", title: "Fixed window counter", unit: "requests", remaining: "requests left in the window",
		doc: "at most Limit per Window, the window opening at the first request; up to 2 x Limit across a boundary"}),
	define(slidinglog.New, slidinglog.NewParams, slidinglog.Config{Limit: 5, Window: 10 * time.Second}, about{
		limit: "Limit", title: "Sliding window log", unit: "requests", remaining: "requests left in the rolling window",
		doc: "exactly at most Limit in any rolling Window; one stored entry per allowed unit"}),
	define(slidingcounter.New, slidingcounter.NewParams, slidingcounter.Config{Limit: 5, Window: 10 * time.Second}, about{
		limit: "Limit", title: "Sliding window counter", unit: "requests", remaining: "requests the estimate still allows",
		doc: "two epoch-aligned windows of Window blended by weight: near-exact Limit per rolling Window, in one value"}),
	define(leakybucket.New, leakybucket.NewParams, leakybucket.Config{Capacity: 5, LeakRate: 1, Per: 2 * time.Second}, about{
		limit: "Capacity", title: "Leaky bucket (policing)", unit: "units", remaining: "room left in the bucket",
		doc: "a bucket of Capacity draining LeakRate per Per; a request that would overflow it is denied, no bursts beyond Capacity"}),
	define(gcra.New, gcra.NewParams, gcra.Config{Rate: 1, Period: 2 * time.Second, Burst: 5}, about{
		limit: "Burst", title: "GCRA", unit: "requests", remaining: "requests available now",
		doc: "generic cell rate algorithm: Rate per Period in bursts of up to Burst, one stored time per key"}),
}

// Algorithm is one entry of All.
type Algorithm struct {
	// Name is the algorithm's package name, which is also its name in
	// scripts and errors: "tokenbucket".
	Name string
	// Title is a short human name: "Token bucket".
	Title string
	// Doc is one line on what the algorithm allows.
	Doc string
	// Unit is what the counts count ("tokens", "requests"), for labels.
	Unit string
	// Remaining says what a Decision's Remaining counts.
	Remaining string
	// Params are the parameters New takes, in the order of the Config's
	// fields; exactly one has Limit set.
	Params []Param

	build  func(runner core.ScriptRunner, p Params, clock core.Clock, prefix string) (*ratekit.Limiter, error)
	params func(p Params) (core.Params, error)
}

// Kind is what a parameter's value is.
type Kind int

const (
	// Count is an int64: a count, capacity or rate.
	Count Kind = iota
	// Duration is a time.Duration, given in Params as its int64
	// (nanoseconds): int64(time.Second).
	Duration
	// Choice is one of Param.Choices, given in Params as its index: a
	// bool (false 0, true 1), or a ratekit.Carry.
	Choice
)

// String names the kind: "count", "duration" or "choice".
func (k Kind) String() string {
	switch k {
	case Count:
		return "count"
	case Duration:
		return "duration"
	case Choice:
		return "choice"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Param is one parameter of an algorithm: one field of its Config.
type Param struct {
	// Name is Field in snake case: "refill_interval".
	Name string
	// Field is the Config field: "RefillInterval". Errors from New name it.
	Field string
	Kind  Kind
	// Default is a sensible value for a UI; for a Duration, a
	// time.Duration's int64.
	Default int64
	// Limit marks the parameter that is the limiter's limit: the largest
	// cost a request may have, and every Decision's Limit.
	Limit bool
	// choices names a Choice's values (Choices); a pointer, so that Param
	// compares with ==.
	choices *[]string
}

// Choices names a Choice's values, in the order of their indexes
// (["false", "true"], or ratekit.Carries()); nil for the other kinds.
func (p Param) Choices() []string {
	if p.choices == nil {
		return nil
	}
	return *p.choices
}

// Params are an algorithm's parameter values by Param.Name; a Duration's
// value is a time.Duration's int64, a Choice's the index of its value.
type Params map[string]int64

// Lookup returns the algorithm named name.
func Lookup(name string) (Algorithm, bool) {
	for _, a := range All {
		if a.Name == name {
			return a, true
		}
	}
	return Algorithm{}, false
}

// Names returns the names of All, in order.
func Names() []string {
	names := make([]string, len(All))
	for i, a := range All {
		names[i] = a.Name
	}
	return names
}

// New returns a limiter of the algorithm with the parameters p, storing
// its state through runner under prefix (the package's default prefix when
// empty), deciding at clock's time (nil: the store's): what the package's
// New returns, so that it can be a limit of a policy. p must give every
// Count and Duration parameter and nothing else; a Choice it leaves out
// is its value 0, the Config field's zero value. An error wraps core.ErrInvalidConfig and
// names the parameter or the Config field.
func (a Algorithm) New(runner core.ScriptRunner, p Params, clock core.Clock, prefix string) (*ratekit.Limiter, error) {
	if err := a.check(p); err != nil {
		return nil, err
	}
	return a.build(runner, p, clock, prefix)
}

// NewParams returns the parameters p, to give with a request
// (core.Request.Params) to a limiter of the algorithm instead of those it
// was built with: what the package's NewParams returns. p must give
// every Count and Duration parameter and nothing else (a Choice left out
// is 0, as in New); an error wraps core.ErrInvalidConfig
// and names the parameter or the Config field, as New's.
func (a Algorithm) NewParams(p Params) (core.Params, error) {
	if err := a.check(p); err != nil {
		return nil, err
	}
	return a.params(p)
}

// check refuses p unless it gives each of a's Count and Duration
// parameters, and only a's parameters.
func (a Algorithm) check(p Params) error {
	if a.build == nil {
		return fmt.Errorf("%w: algorithms: Algorithm %q is not one of All (take it from All or Lookup)", core.ErrInvalidConfig, a.Name)
	}
	for _, prm := range a.Params {
		v, ok := p[prm.Name]
		if !ok && prm.Kind != Choice {
			return fmt.Errorf("%w: %s: parameter %s (%s) is missing", core.ErrInvalidConfig, a.Name, prm.Name, prm.Field)
		}
		if c := prm.Choices(); c != nil && (v < 0 || v >= int64(len(c))) {
			return fmt.Errorf("%w: %s: %s must be one of its %d values (0 to %d: %s), got %d", core.ErrInvalidConfig, a.Name, prm.Field, len(c), len(c)-1, strings.Join(c, ", "), v)
		}
	}
	for name := range p {
		if _, ok := a.Param(name); !ok {
			return fmt.Errorf("%w: %s has no parameter %q (its parameters: %s)", core.ErrInvalidConfig, a.Name, name, strings.Join(a.paramNames(), ", "))
		}
	}
	return nil
}

// Defaults returns every parameter at its default.
func (a Algorithm) Defaults() Params {
	p := make(Params, len(a.Params))
	for _, prm := range a.Params {
		p[prm.Name] = prm.Default
	}
	return p
}

// Param returns the parameter named name.
func (a Algorithm) Param(name string) (Param, bool) {
	i := slices.IndexFunc(a.Params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return a.Params[i], true
}

// Limit returns the parameter that is the limiter's limit, or the zero
// Param for an Algorithm that is not one of All.
func (a Algorithm) Limit() Param {
	i := slices.IndexFunc(a.Params, func(p Param) bool { return p.Limit })
	if i < 0 {
		return Param{}
	}
	return a.Params[i]
}

func (a Algorithm) paramNames() []string {
	names := make([]string, len(a.Params))
	for i, p := range a.Params {
		names[i] = p.Name
	}
	return names
}

// about is what an entry of All says besides its constructor and defaults.
type about struct {
	limit                       string // the Config field that is the limit
	title, unit, remaining, doc string
}

var (
	boolChoices  = []string{"false", "true"}
	durationType = reflect.TypeFor[time.Duration]()
	carryType    = reflect.TypeFor[ratekit.Carry]()
)

// define makes an entry from a package's New and NewParams and a Config
// holding the defaults. Every field of C but Prefix and Clock is a parameter: an int64
// is a Count, a time.Duration a Duration, a bool or a ratekit.Carry a
// Choice. A Config that does not fit (a
// field of another type, no Prefix or Clock, no limit field) panics when
// the program starts, so that no such entry ever gets used.
func define[C any](newFn func(core.ScriptRunner, C) (*ratekit.Limiter, error), paramsFn func(C) (core.Params, error), defaults C, ab about) Algorithm {
	t := reflect.TypeFor[C]()
	a := Algorithm{Name: path.Base(t.PkgPath()), Title: ab.title, Doc: ab.doc, Unit: ab.unit, Remaining: ab.remaining}
	var index []int // Config field of each parameter
	def := reflect.ValueOf(defaults)
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Name == "Prefix" && f.Type.Kind() == reflect.String, f.Name == "Clock" && f.Type == reflect.TypeFor[core.Clock]():
			continue
		case !f.IsExported():
			panic(fmt.Sprintf("algorithms: %s: unexported Config field %s", t, f.Name))
		}
		prm := Param{Name: snake(f.Name), Field: f.Name, Kind: Count, Limit: f.Name == ab.limit}
		switch {
		case f.Type == durationType:
			prm.Kind, prm.Default = Duration, def.Field(i).Int()
		case f.Type == carryType:
			names := ratekit.Carries()
			prm.Kind, prm.Default, prm.choices = Choice, def.Field(i).Int(), &names
		case f.Type.Kind() == reflect.Bool && f.Type.PkgPath() == "":
			prm.Kind, prm.choices = Choice, &boolChoices
			if def.Field(i).Bool() {
				prm.Default = 1
			}
		case f.Type.Kind() == reflect.Int64 && f.Type.PkgPath() == "":
			prm.Default = def.Field(i).Int()
		default:
			panic(fmt.Sprintf("algorithms: %s.%s is a %s; a parameter is an int64, a time.Duration, a bool or a ratekit.Carry", t, f.Name, f.Type))
		}
		a.Params = append(a.Params, prm)
		index = append(index, i)
	}
	for _, f := range []string{"Prefix", "Clock"} {
		if _, ok := t.FieldByName(f); !ok {
			panic(fmt.Sprintf("algorithms: %s has no %s field", t, f))
		}
	}
	if i := slices.IndexFunc(a.Params, func(p Param) bool { return p.Limit }); i < 0 || a.Params[i].Kind != Count {
		panic(fmt.Sprintf("algorithms: %s: the limit %q is not a count parameter of %s", a.Name, ab.limit, t))
	}
	params := a.Params
	config := func(p Params) (cfg C) {
		v := reflect.ValueOf(&cfg).Elem()
		for i, prm := range params {
			if f := v.Field(index[i]); f.Kind() == reflect.Bool {
				f.SetBool(p[prm.Name] != 0)
			} else {
				f.SetInt(p[prm.Name])
			}
		}
		return cfg
	}
	a.build = func(runner core.ScriptRunner, p Params, clock core.Clock, prefix string) (*ratekit.Limiter, error) {
		cfg := config(p)
		v := reflect.ValueOf(&cfg).Elem()
		v.FieldByName("Prefix").SetString(prefix)
		if clock != nil {
			v.FieldByName("Clock").Set(reflect.ValueOf(clock))
		}
		return newFn(runner, cfg)
	}
	a.params = func(p Params) (core.Params, error) { return paramsFn(config(p)) }
	return a
}

// snake turns a Go field name into a parameter name: RefillInterval into
// refill_interval, MaxTTL into max_ttl.
func snake(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
