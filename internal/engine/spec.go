package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// Modes of a call.
const (
	ModeAllow  = 0 // decide for n and count it when allowed
	ModePeek   = 1 // decide for n, never write
	ModeAtMost = 2 // allow as many of n as fit (GCRA)
	// ModeRefund gives n back: the step takes n off what the key has
	// counted (never below nothing), writes that, and replies as a Peek
	// would. What a refund can undo is each algorithm's to document.
	ModeRefund = 3
)

// Kind says how a parameter is checked and converted at New.
type Kind int

const (
	// Count is a positive count, capacity or rate, at most params.MaxCount.
	Count Kind = iota
	// Micros is a time.Duration, passed as whole microseconds: positive, a
	// whole number of microseconds, at most params.MaxSpan.
	Micros
	// Scheduled is set for each call by the engine's schedule
	// (Engine.SetSchedule), and is 0 in a limiter without one.
	Scheduled
)

// Param declares one parameter of an algorithm's step: its name in Lua
// (p.<Name> in the step) and the configuration field it comes from (named
// in errors).
type Param struct {
	Name  string
	Field string
	Kind  Kind
}

// Call is what every step is given besides its key and parameters.
type Call struct {
	Now         int64 // µs: the limiter's clock, or the store's
	ClientClock bool  // Now came from the limiter's clock
	N           int64 // the cost
	Mode        int64 // ModeAllow, ModePeek or ModeAtMost
}

// Reply is a step's decision: {allowed, remaining, retry_after_us,
// reset_after_us}, or params.CorruptReply.
type Reply = [4]int64

// State is the value a step stages for its key. The composed script
// writes it only when the whole call commits (every limit of a multi-limit
// call allowed).
type State struct {
	Write bool
	TTL   time.Duration
	// Vals[:N] is the value, or List when it is not nil (a state longer
	// than Vals, such as the sliding log); an empty, non-nil List deletes
	// the key.
	N    int
	Vals [6]int64
	List []int64
}

// Set stages a value of fixed size.
func (s *State) Set(ttl time.Duration, vals ...int64) {
	s.Write, s.TTL, s.N = true, ttl, len(vals)
	for i, v := range vals { // a few values: cheaper than copy's memmove
		s.Vals[i] = v
	}
}

// StepFunc is the Go twin of an algorithm's Lua step: it decides key at
// c with the parameters p (in the order of Spec.Params) and reads the key
// through tx, and it never writes: it returns the state to write, if any.
type StepFunc func(tx core.Tx, key string, c Call, p []int64) (Reply, State)

// Spec is one algorithm, declared once: its name, its parameters (names,
// order, checks), its Lua step and the step's Go twin. Every script a
// store runs for it is composed from this declaration (NewSpec).
type Spec struct {
	Name   string
	Params []Param
	// Lua defines the step as a function named after the algorithm,
	// local function name(key, now, client_clock, n, mode, <Params' names
	// in order>), returning allowed, remaining, retry_us, reset_us, and
	// value, ttl_us, write: what it writes (see compose.go).
	Lua  string
	Step StepFunc

	// The scripts composed from the step, built by NewSpec.
	allow, peek, batch *core.Script
}

// NewSpec composes s's scripts: one decision (read-write, and read-only
// for Peek) and a batch of decisions on many keys.
func NewSpec(s Spec) *Spec {
	checkSignature(&s, true)
	s.allow = core.NewScript(s.Name, singleLua(&s), singleTwin(&s), false)
	s.peek = core.NewScript(s.Name, s.allow.Lua(), s.allow.Twin(), true)
	s.batch = core.NewScript(s.Name+":batch", batchLua(&s), batchTwin(&s), false)
	return &s
}

// Allow, Peek and Batch return the spec's composed scripts.
func (s *Spec) Allow() *core.Script { return s.allow }

// Peek is the read-only script Peek runs.
func (s *Spec) Peek() *core.Script { return s.peek }

// Batch decides many keys in one call.
func (s *Spec) Batch() *core.Script { return s.batch }

// values checks raw, one value per parameter in the order of Params
// (durations as their int64 nanoseconds), and returns the script's
// parameters.
func (s *Spec) values(raw []int64) ([]int64, error) {
	if len(raw) != len(s.Params) {
		return nil, fmt.Errorf("%w: %s takes %d parameters, got %d", core.ErrInvalidConfig, s.Name, len(s.Params), len(raw))
	}
	out := make([]int64, len(raw))
	for i, p := range s.Params {
		switch p.Kind {
		case Count:
			if err := params.Count(p.Field, raw[i]); err != nil {
				return nil, err
			}
			out[i] = raw[i]
		case Micros:
			us, err := params.Micros(p.Field, time.Duration(raw[i]))
			if err != nil {
				return nil, err
			}
			out[i] = us
		case Scheduled:
			if raw[i] != 0 {
				return nil, fmt.Errorf("%w: %s: parameter %s is set for each call, not configured", core.ErrInvalidConfig, s.Name, p.Name)
			}
		}
	}
	return out, nil
}

// luaArgs returns k arguments read from ARGV as numbers, from
// ARGV[first] on: "ARGV[4] + 0, ARGV[5] + 0" (arithmetic converts a
// decimal string without the cost of calling tonumber).
func luaArgs(k, first int) string {
	var b strings.Builder
	for i := range k {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "ARGV[%d] + 0", first+i)
	}
	return b.String()
}

// luaLocals returns the names of k Lua locals holding parameters: "p1, p2".
func luaLocals(k int) string {
	names := make([]string, k)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i+1)
	}
	return strings.Join(names, ", ")
}

// checkSignature panics unless s.Lua defines its step as the composed
// scripts call it: local function <Name>(key, now, client_clock, n, mode,
// then Params' names in order, then extra (the names of a call's own
// arguments, ArgsScript); with open, any further arguments may follow
// (a step that ArgsScript also calls with arguments of its own). The
// parameters' order is declared once, in Params; this keeps the Lua's
// names from drifting from it. Specs are package variables, so a mismatch
// fails every test of the package.
func checkSignature(s *Spec, open bool, extra ...string) {
	names := []string{"key", "now", "client_clock", "n", "mode"}
	for _, p := range s.Params {
		names = append(names, p.Name)
	}
	names = append(names, extra...)
	want := "local function " + s.Name + "(" + strings.Join(names, ", ")
	if !strings.Contains(s.Lua, want+")") && (!open || !strings.Contains(s.Lua, want+", ")) {
		panic(fmt.Sprintf("engine: the Lua step of %s does not begin with %q", s.Name, want+")"))
	}
}
