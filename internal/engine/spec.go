package engine

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
)

// Mode is what a call asks of a step. The composed scripts hold each as a
// Lua constant (MODE_ALLOW, ...; see prelude.go), so a step compares
// mode == MODE_PEEK, never a number written by hand.
type Mode int64

// The modes of a call.
const (
	// ModeAllow decides for n and counts it when allowed.
	ModeAllow Mode = iota
	// ModePeek decides for n and never writes.
	ModePeek
	// ModeAtMost allows as many of n as fit, and replies how many in the
	// place of allowed (GCRA: Spec.AtMost).
	ModeAtMost
	// ModeRefund gives n back: the step takes n off what the key has
	// counted (never below nothing), writes that, and replies as a Peek
	// would. What a refund can undo is each algorithm's to document. The
	// concurrency limiter's release is its refund.
	ModeRefund
	// ModeExtend prolongs a lease (the concurrency limiter).
	ModeExtend
)

// modeNames are the modes' Lua constants, in the order of their values.
var modeNames = [...]string{
	ModeAllow:  "MODE_ALLOW",
	ModePeek:   "MODE_PEEK",
	ModeAtMost: "MODE_AT_MOST",
	ModeRefund: "MODE_REFUND",
	ModeExtend: "MODE_EXTEND",
}

// Kind says how a parameter is checked and converted at New.
type Kind int

const (
	// Count is a positive count, capacity or rate, at most params.MaxCount.
	Count Kind = iota
	// Micros is a time.Duration, passed as whole microseconds: positive, a
	// whole number of microseconds, at most params.MaxSpan.
	Micros
	// Scheduled is set for each call by the limit's schedule
	// (Limit.Schedule), and is 0 in a limit without one.
	Scheduled
	// Choice is one of Param.Choices options, numbered from 0: 0 is the
	// default (a bool is 0 or 1).
	Choice
)

// Param declares one parameter of an algorithm's step: its name in Lua
// (the step's argument) and the configuration field it comes from (named
// in errors).
type Param struct {
	Name  string
	Field string
	Kind  Kind
	// Choices names a Choice's values, in order.
	Choices []string
}

// Event is one request a limit allowed, as a Spec's Bound reads it.
type Event struct {
	At   int64 // µs
	Cost int64
}

// Call is what every step is given besides its key and parameters.
type Call struct {
	Now         int64 // µs: the limiter's clock, or the store's
	ClientClock bool  // Now came from the limiter's clock
	N           int64 // the cost
	Mode        Mode
}

// Reply is a step's decision: {allowed, remaining, retry_after_us,
// reset_after_us}, or params.CorruptReply.
type Reply = [4]int64

// State is the value a step stages for its key. The composed script
// writes it only when the whole call commits (every limit of a policy
// allowed).
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
// c with the parameters p and reads the key through tx, and it never
// writes: it returns the state to write, if any.
type StepFunc func(tx core.Tx, key string, c Call, p Args) (Reply, State)

// maxParams is the most parameters a step takes, with the call's own
// arguments (ArgsScript).
const maxParams = 4

// Args are a step's parameters, in the order of Spec.Params, then the
// call's own arguments (ArgsScript); the rest are 0. A step takes them by
// value: its copy is the call's own (a slice's array would escape through
// the step's function value), so that a limit a request gives, or one its
// schedule sets, needs no memory of its own.
type Args [maxParams]int64

// argsOf returns the Args that begin with p.
func argsOf(p []int64) (a Args) {
	for i, v := range p { // a few values: cheaper than copy's memmove
		a[i] = v
	}
	return a
}

// Spec is one algorithm, declared once: its name, its parameters (names,
// order, checks), its Lua step and the step's Go twin. Every script a
// store runs for it is composed from this declaration (compose.go).
type Spec struct {
	Name   string
	Params []Param
	// Lua defines the step as a function named after the algorithm,
	// local function name(key, now, client_clock, n, mode, <Params' names
	// in order>), returning allowed, remaining, retry_us, reset_us, and
	// value, ttl_us, write: what it writes (see compose.go).
	Lua  string
	Step StepFunc
	// AtMost says that the step grants part of a request in ModeAtMost.
	AtMost bool
	// StateLen is how many integers the step stores at its key (prelude's
	// state() and read_state(key, StateLen)); its twin checks the same
	// count with params.State. 0: the step keeps another kind of value
	// (the sliding log's sorted set). NewSpec checks the Lua against it.
	StateLen int
	// OldStateLen, when not 0, is the count of integers of the state an
	// earlier ratekit stored at the key, shorter than StateLen: the step
	// reads both (read_state(key, StateLen, OldStateLen)), the older one
	// as written under the configuration reading it.
	OldStateLen int

	// The guarantee of a rate algorithm, which the conformance suite
	// checks on every store (each algorithm's bound.go says why it holds).
	// Bound returns an error when allowed, the requests a limit
	// configured with p (Limit.Params) allowed on one key since it was
	// last reset, oldest first, break the limit by the newest of them.
	// Each request is at its key's time: the clock, or the key's last
	// write when the clock is behind it.
	Bound func(p []int64, allowed []Event) error
	// LooseBound is the bound where each gap between the newest request
	// and an older one may be longer than it was (times read from a
	// server's clock, conformance.RunServerClock); nil: Bound.
	LooseBound func(p []int64, allowed []Event) error
	// MaxWait returns the longest RetryAfter or ResetAfter a decision of
	// a limit configured with p and window (Limit.Window) may have once
	// the clock has caught up with the key's last write; nil: window.
	MaxWait func(p []int64, window time.Duration) time.Duration

	// The scripts of a limiter of this algorithm alone (read-write, and
	// read-only for Peek), composed by NewSpec.
	rw, ro *core.Script
}

// NewSpec checks s's Lua signature and its count of parameters (at most
// four: Args), and composes the scripts of a limiter of s alone. Specs
// are package variables: a mismatch panics when the program starts, so
// that every test of the package fails.
func NewSpec(s Spec) *Spec {
	if len(s.Params) > maxParams {
		panic(fmt.Sprintf("engine: %s takes %d parameters, more than %d", s.Name, len(s.Params), maxParams))
	}
	checkSignature(&s, true)
	checkStateLen(&s)
	sh := shape{specs: []*Spec{&s}}
	s.rw, s.ro = sh.compose()
	return &s
}

// Limit returns a limit of the algorithm configured with raw, one value
// per parameter in the order of Params (a duration as its int64
// nanoseconds), checked as the parameters declare: under prefix (the
// default one when empty), with max as its Decision.Limit and largest
// cost. An error wraps core.ErrInvalidConfig and names the field.
func (s *Spec) Limit(prefix, defaultPrefix string, max int64, raw []int64) (Limit, error) {
	if prefix == "" {
		prefix = defaultPrefix
	}
	if err := checkPrefix(prefix); err != nil {
		return Limit{}, err
	}
	if len(raw) != len(s.Params) {
		return Limit{}, fmt.Errorf("%w: %s takes %d parameters, got %d", core.ErrInvalidConfig, s.Name, len(s.Params), len(raw))
	}
	vals := make([]int64, len(raw))
	for i, p := range s.Params {
		switch p.Kind {
		case Count:
			if err := params.Count(p.Field, raw[i]); err != nil {
				return Limit{}, err
			}
			vals[i] = raw[i]
		case Micros:
			us, err := params.Micros(p.Field, time.Duration(raw[i]))
			if err != nil {
				return Limit{}, err
			}
			vals[i] = us
		case Scheduled:
			if raw[i] != 0 {
				return Limit{}, fmt.Errorf("%w: %s: parameter %s is set for each call, not configured", core.ErrInvalidConfig, s.Name, p.Name)
			}
		case Choice:
			if raw[i] < 0 || raw[i] >= int64(len(p.Choices)) {
				return Limit{}, fmt.Errorf("%w: %s must be one of %s, got %d", core.ErrInvalidConfig, p.Field, strings.Join(p.Choices, ", "), raw[i])
			}
			vals[i] = raw[i]
		}
	}
	return Limit{Spec: s, Prefix: prefix, Params: vals, Max: max}, nil
}

// Limit is one limit of an Engine: an algorithm's step, configured, and,
// in a policy, its name and how it enforces.
type Limit struct {
	Spec   *Spec
	Prefix string
	// Params are the step's parameters, in the order of Spec.Params.
	Params []int64
	// Max is the limit: every Decision's Limit, and the largest cost.
	Max int64
	// Window is every Decision's Window: the time in which the limit gives
	// back its whole Max.
	Window time.Duration
	// Schedule, when set, sets some parameters for each call from its
	// time (a calendar window sets its window's start and length). A
	// limit with a Schedule needs a Clock, so that every call's time is
	// known before the call.
	Schedule Schedule

	// In a policy: the limit's name, whether it runs in shadow, and the
	// penalty (µs, 0 for none) its denial starts.
	Name    string
	Shadow  bool
	Penalty int64
}

// Schedule sets a limit's Scheduled parameters for each call. It is a
// comparable value (a pointer), so that Params holding one compare.
type Schedule interface {
	// Set returns p, a limit's parameters, with its scheduled entries
	// set for a call at now (µs).
	Set(now int64, p Args) Args
}

// Param returns the value of parameter i, as checked and converted.
func (l Limit) Param(i int) int64 { return l.Params[i] }

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

// checkStateLen panics unless s.Lua reads its key's state with
// read_state(key, StateLen) (read_state(key, StateLen, OldStateLen) when
// it has an older state), and only so, or, with StateLen 0, never
// reads it that way: the count is declared once, in StateLen, which the
// twin checks too.
func checkStateLen(s *Spec) {
	const call = "read_state(key, "
	want := call + strconv.Itoa(s.StateLen) + ")"
	if s.OldStateLen > 0 {
		want = call + strconv.Itoa(s.StateLen) + ", " + strconv.Itoa(s.OldStateLen) + ")"
	}
	reads := strings.Count(s.Lua, call)
	switch {
	case s.StateLen > 0 && reads == 0:
		panic(fmt.Sprintf("engine: the Lua step of %s never calls %s (Spec.StateLen)", s.Name, want))
	case reads != strings.Count(s.Lua, want) || s.StateLen == 0 && reads > 0:
		panic(fmt.Sprintf("engine: the Lua step of %s calls read_state(key, ...) with another count than its Spec.StateLen (%d)", s.Name, s.StateLen))
	}
}
