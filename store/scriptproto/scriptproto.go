// Package scriptproto is the protocol every ratekit Redis adapter speaks to
// run a script, whatever its client library, and the core to build an
// adapter for another client on. An adapter implements [Client] for its
// library (send one command, send several in one round trip, read the
// reply) and returns the [Runner] that [New] builds around it: the store
// limiters take, a core.ScriptRunner, core.BatchRunner, core.SingleNode
// and core.StoreNamer. [NewRueidis] is the whole adapter for rueidis and
// for valkey-go.
//
// What a Runner does, whatever the adapter:
//
//   - nothing is sent when a call's context has already ended, and the
//     error of a call that ran out of time wraps the context's error;
//   - a script whose keys span Redis Cluster slots is refused before it is
//     sent, on every topology, so that what works on one node works on a
//     cluster; only a batch call marked core.ScriptCall.AnySlot runs
//     anyway, on a Runner built with SingleNode(true), until a server
//     answers one CROSSSLOT (a cluster behind one address);
//   - a script runs as a Redis function (FCALL, FCALL_RO when it is
//     read-only) where the adapter can load function libraries ([Loader])
//     and the server has functions (Redis 7.0 and later, Valkey): each
//     script is a library of its own ([Library]), loaded by the Runner
//     when a server answers that it lacks it; elsewhere, and for a call
//     that met a missing library, as EVALSHA (Redis functions, below);
//   - a script runs as EVALSHA, or EVALSHA_RO when it is read-only (plain
//     EVALSHA with [WithoutReadOnlyCommands]), and again as EVAL (EVAL_RO)
//     when the server answers NOSCRIPT, which loads it: after a restart, a
//     failover or SCRIPT FLUSH, scripts load themselves again;
//   - a server that answers a read-only script that it lacks the _RO
//     command (Redis before 7.0: "ERR unknown command 'evalsha_ro'") gets
//     that call again as plain EVALSHA (a read-only script never writes,
//     so sending it again is safe), and every later read-only script of
//     the Runner goes as EVALSHA and EVAL, on every node: one refusal
//     costs one round trip, once per store;
//   - a batch is one DoMulti of FCALL (or EVALSHA), then one DoMulti of
//     EVALSHA for the calls that met a missing function, then one of EVAL
//     for the calls that met NOSCRIPT; a call on a key of an earlier call
//     of the batch goes in a later DoMulti, so that calls on one key run
//     in order;
//   - a reply must be an array of integers (core.ErrUnexpectedReply
//     otherwise);
//   - every failure wraps core.ErrStore and the client's own error, and a
//     read-only script the server refuses names the option that helps.
//
// # Redis functions
//
// Where it can, a Runner runs each script as a Redis function (FUNCTION
// LOAD, FCALL; Redis 7.0 and later, Valkey). A script sent as EVALSHA runs its whole Lua source at
// every call: every local function of its head ([core.Script.Head]: for
// ratekit's composed scripts the prelude and the algorithms' steps) is
// made again before any work. As a function, the head runs once, when the
// library is loaded, and each call runs the body alone, which costs the
// server less per decision (docs/design.md, "What a script costs").
//
// Each script is a library of its own, [Library], named after the SHA-1
// of its source, as EVALSHA names it: two ratekit versions (or two
// compositions of limits) on one server never replace each other's
// functions, and a library, once loaded, never changes. A Runner whose
// Client is a [Loader] calls functions first; a call the server answers
// "Function not found" (a server restarted without persistence, FUNCTION
// FLUSH, a node added to a cluster or given slots: functions do not
// travel with slots) loads its script's library on every primary the
// client knows, one load at a time per Runner, and goes again as EVALSHA,
// then EVAL on NOSCRIPT. A missing function runs nothing, so no decision
// is lost or counted twice, whatever is flushed while calls run.
//
// A server that has no functions or refuses them (Redis before 7.0,
// miniredis: "unknown command"; an ACL without FCALL or without FUNCTION
// LOAD: NOPERM; any other refusal of FUNCTION LOAD) turns them off for the
// Runner, as a server without EVALSHA_RO does for the read-only commands:
// every later call of the Runner goes as EVALSHA, on every node. The
// refusal costs one round trip per store, and nothing after.
// [WithoutFunctions] sends EVALSHA from the start.
//
// A Redis server keeps function libraries in its data set (RDB, AOF,
// replicas), so libraries of versions no longer deployed stay until
// deleted: FUNCTION LIST LIBRARYNAME 'ratekit_*' lists them, FUNCTION
// DELETE removes one, and a Runner loads again any it needs.
//
// # Writing an adapter
//
// An adapter for a client library mylib is a package with one function
// and a [Client]:
//
//	func New(c *mylib.Client, opts ...scriptproto.Option) (*scriptproto.Runner, error) {
//		if c == nil {
//			return nil, fmt.Errorf("%w: mylib: a nil client", core.ErrInvalidConfig)
//		}
//		return scriptproto.New("mylib", client{c}, opts...)
//	}
//
// New's first options are the adapter's own, from what its client tells
// of itself (SingleNode, Pipelining), and the caller's come after, so that
// a caller may override them. Its tests run the conformance suite
// (conformance.Run and conformance.RunServerClock) on a real server.
package scriptproto

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/slot"
)

// Name is the command a script runs as.
type Name uint8

// The six script commands.
const (
	EvalSHA   Name = iota // EVALSHA sha1 numkeys keys... args...
	EvalSHARO             // EVALSHA_RO: the server refuses writes
	Eval                  // EVAL lua numkeys keys... args...
	EvalRO                // EVAL_RO
	FCall                 // FCALL function numkeys keys... args...
	FCallRO               // FCALL_RO: the function is flagged no-writes
)

var (
	upper = [...]string{EvalSHA: "EVALSHA", EvalSHARO: "EVALSHA_RO", Eval: "EVAL", EvalRO: "EVAL_RO", FCall: "FCALL", FCallRO: "FCALL_RO"}
	lower = [...]string{EvalSHA: "evalsha", EvalSHARO: "evalsha_ro", Eval: "eval", EvalRO: "eval_ro", FCall: "fcall", FCallRO: "fcall_ro"}
)

// String returns the command's name in capitals, "EVALSHA_RO".
func (n Name) String() string { return upper[n] }

// Lower returns the command's name in lower case, "evalsha_ro", as
// go-redis expects it.
func (n Name) Lower() string { return lower[n] }

// ReadOnly reports whether the command is EVALSHA_RO, EVAL_RO or FCALL_RO.
func (n Name) ReadOnly() bool { return n == EvalSHARO || n == EvalRO || n == FCallRO }

// function reports whether the command is FCALL or FCALL_RO.
func (n Name) function() bool { return n == FCall || n == FCallRO }

// Cmd is one script command: Name Payload() len(Keys) Keys... Args....
type Cmd struct {
	Name   Name
	Script *core.Script
	Keys   []string
	Args   []int64
	fn     string // Function(Script), set by the Runner for FCALL
}

// Payload returns the script's SHA1 for EVALSHA and EVALSHA_RO, its Lua
// source for EVAL and EVAL_RO, and its function's name ([Function]) for
// FCALL and FCALL_RO.
func (c Cmd) Payload() string {
	switch c.Name {
	case Eval, EvalRO:
		return c.Script.Lua()
	case FCall, FCallRO:
		if c.fn != "" {
			return c.fn
		}
		return Function(c.Script)
	}
	return c.Script.SHA1()
}

// Client is the part of an adapter that its client library forces.
//
// Do sends c and appends the integers of its reply to reply. DoMulti sends
// cmds in one round trip per server and leaves cmds[i]'s outcome, as Do
// would return it, in out[i]: out has len(cmds) entries, and out[i].Reply
// holds the buffer to append cmds[i]'s integers to.
//
// A command's Keys and Args are the caller's, valid only until Do or
// DoMulti returns (limiters build keys in memory they reuse): a Client
// whose library may still hold or write them afterwards (a command queued,
// or written after its context ended) copies them first.
//
// The error of a command that failed is the client's own, unwrapped: the
// Runner wraps it, recognises NOSCRIPT and CROSSSLOT by its text, and adds
// the context's error when the context ended. A reply of the wrong shape
// is an error from [BadReply] or [DecodeAny].
type Client interface {
	Do(ctx context.Context, c Cmd, reply []int64) ([]int64, error)
	DoMulti(ctx context.Context, cmds []Cmd, out []core.ScriptResult)
}

// Runner runs scripts with the protocol through a Client: it is the store
// an adapter's New returns. It is safe for concurrent use. Its zero value
// and a nil *Runner run nothing: every call fails with an error wrapping
// core.ErrStore and core.ErrInvalidConfig, and StoreName is "", so
// limiters refuse them when they are built.
type Runner struct {
	lib      string // the client library: StoreName, and the prefix of errors
	c        Client // nil when the Runner was not built by New
	plainRO  bool   // WithoutReadOnlyCommands
	pipeline bool
	// noRO is set once a server answered that it lacks EVALSHA_RO or
	// EVAL_RO: read-only scripts go as EVALSHA and EVAL from then on.
	noRO atomic.Bool
	// fn holds what the Runner knows of functions (functions.go).
	fn functions
	// single is set while the server is taken to be one node that lets a
	// script's keys span slots (SingleNode).
	single atomic.Bool
}

var (
	_ core.BatchRunner = (*Runner)(nil)
	_ core.SingleNode  = (*Runner)(nil)
	_ core.StoreNamer  = (*Runner)(nil)
)

// Option configures a Runner.
type Option func(*Runner)

// WithoutReadOnlyCommands runs read-only scripts (a limiter's Peek) with
// EVALSHA and EVAL from the first call, for miniredis (whose EVAL_RO
// refuses TIME) and for those who want no probe on a server older than
// Redis 7.0. Without it, a Runner whose server answers that it lacks
// EVALSHA_RO sends that call again as EVALSHA, and every later read-only
// script as EVALSHA and EVAL. The scripts still never write; the server
// just no longer enforces it.
func WithoutReadOnlyCommands() Option {
	return func(r *Runner) { r.plainRO = true }
}

// SingleNode says whether the client talks to one server that lets a
// script's keys span cluster slots: a Redis server not in cluster mode, or
// the primary behind Sentinel; false, the default, for a cluster or a
// client that may span nodes. An adapter gives it from what its client
// tells of itself. On a Runner that is one node, limiters decide a batch
// of keys in any slots with one script call (core.SingleNode); a server
// that answers such a call CROSSSLOT makes it false from then on, and the
// call's error says so.
func SingleNode(one bool) Option {
	return func(r *Runner) { r.single.Store(one) }
}

// Pipelining says whether the Runner pipelines concurrent calls, for a
// client that sends one command per connection at a time (store/goredis
// turns it on for the clients it knows). Up to four calls go as they
// come, each alone, on its caller's goroutine: a lone caller waits for
// nothing and pays nothing. A call that comes while four are in flight is
// queued, and the queue goes, as soon as one of them returns, as one
// DoMulti (one write and one read per server), sent by one of the queued
// callers. Each call stays its own command, with its own reply, error and
// EVAL fallback, so decisions are those of calls sent one by one; what the
// client and the server save is a write, a read and a wake-up per call.
//
// A caller whose context ends while it is queued returns at once, with an
// error wrapping core.ErrStore and the context's error, and nothing is
// sent for it; once its pipeline is out it returns at once too, but its
// script may still run. A pipeline has no cancellation of its own (no
// caller leaving fails the others' calls), the latest deadline of its
// calls (none if one has none) and the values of its first call's
// context, which is what the client's hooks (tracing) see.
//
// Turn it off (Pipelining(false)) when a queued call must not wait for a
// call in flight to return: a queued call waits up to one round trip
// before it is sent, and on a client of several servers a pipeline
// returns when its slowest server has answered, so one slow server delays
// the calls to the others that share its pipeline. Also when the client's
// hooks must see each call under its own context, and when the client
// pipelines already.
func Pipelining(on bool) Option {
	return func(r *Runner) { r.pipeline = on }
}

// New returns a Runner that runs scripts through c for the client library
// lib, the store's name (core.StoreNamer: its directory under store/ for
// ratekit's own adapters) and the prefix of its errors. It sends nothing.
// A nil c, an empty lib or a nil Option is an error wrapping
// core.ErrInvalidConfig. Options apply in order: a later one overrides an
// earlier one.
func New(lib string, c Client, opts ...Option) (*Runner, error) {
	switch {
	case lib == "":
		return nil, fmt.Errorf("%w: scriptproto.New: no library name", core.ErrInvalidConfig)
	case c == nil:
		return nil, fmt.Errorf("%w: %s: a nil client", core.ErrInvalidConfig, lib)
	}
	r := &Runner{lib: lib}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: %s: option %d is nil", core.ErrInvalidConfig, lib, i)
		}
		o(r)
	}
	r.c = c
	if l, ok := c.(Loader); ok && !r.fn.off.Load() {
		r.fn.loader = l
	} else {
		r.fn.off.Store(true)
	}
	if r.pipeline {
		r.c = newPipe(c, defaultInFlight)
	}
	return r, nil
}

// StoreName returns the client library's name given to New (core.StoreNamer),
// for metrics and traces; "" for a nil or zero Runner.
func (r *Runner) StoreName() string {
	if r == nil || r.c == nil {
		return ""
	}
	return r.lib
}

// SingleNode reports whether batch calls marked core.ScriptCall.AnySlot
// run with keys in any slots (core.SingleNode): the Runner was built with
// SingleNode(true), and no server has answered CROSSSLOT since.
func (r *Runner) SingleNode() bool {
	return r != nil && r.c != nil && r.single.Load()
}

// unusable returns the error every call of a nil or zero Runner gets.
func (r *Runner) unusable() error {
	what := "a zero scriptproto.Runner, not built by New"
	if r == nil {
		what = "a nil *scriptproto.Runner"
	}
	return fmt.Errorf("%w: %w: the store is %s", core.ErrStore, core.ErrInvalidConfig, what)
}

// first returns the command s runs as first: FCALL or FCALL_RO while
// functions are on, else EVALSHA, or EVALSHA_RO when s is read-only and
// the server is not known to lack it.
func (r *Runner) first(s *core.Script) Name {
	ro := s.ReadOnly() && !r.plainRO && !r.noRO.Load()
	switch {
	case !r.fn.off.Load() && ro:
		return FCallRO
	case !r.fn.off.Load():
		return FCall
	case ro:
		return EvalSHARO
	}
	return EvalSHA
}

// next returns the command to send c as again after it failed with err,
// and whether there is one: EVALSHA (EVALSHA_RO) for FCALL (FCALL_RO)
// when the server lacks the function or refuses functions, which it then
// remembers (functions.go); plain EVALSHA (EVAL) for EVALSHA_RO (EVAL_RO)
// when the server lacks the _RO command, which it then remembers; EVAL
// (EVAL_RO) for EVALSHA (EVALSHA_RO) after NOSCRIPT. Each name comes
// after the one it replaces, so a call is sent at most four times.
func (r *Runner) next(c Name, err error) (Name, bool) {
	switch {
	case c.function():
		if !r.fn.fallBack(err) {
			return c, false
		}
		if c == FCallRO {
			return EvalSHARO, true
		}
		return EvalSHA, true
	case c.ReadOnly() && lacksReadOnly(err):
		r.noRO.Store(true)
		return plainOf[c], true
	case (c == EvalSHA || c == EvalSHARO) && isNoScript(err):
		return evalOf[c], true
	}
	return c, false
}

var (
	plainOf = [...]Name{EvalSHA: EvalSHA, EvalSHARO: EvalSHA, Eval: Eval, EvalRO: Eval, FCall: FCall, FCallRO: FCall}
	evalOf  = [...]Name{EvalSHA: Eval, EvalSHARO: EvalRO, Eval: Eval, EvalRO: EvalRO, FCall: FCall, FCallRO: FCallRO}
)

// RunScript runs s as its function, FCALL (FCALL_RO when s is read-only),
// while functions are on (Redis functions, in the package doc), else as
// EVALSHA (EVALSHA_RO), and as EVAL (EVAL_RO) when the server does not
// know the script; it appends the reply's integers to reply. A call that
// met a missing function loads its library and goes again as EVALSHA; a
// read-only script the server refuses for lack of EVALSHA_RO is sent
// again as EVALSHA.
func (r *Runner) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if r == nil || r.c == nil {
		return nil, r.unusable()
	}
	if err := ctx.Err(); err != nil {
		return nil, r.ended(err)
	}
	c := Cmd{Name: r.first(s), Script: s, Keys: keys, Args: args}
	if c.Name.function() {
		c.fn = r.fn.name(s)
	}
	if err := slot.Check(keys); err != nil {
		return nil, r.fail(c, err)
	}
	out, err := r.c.Do(ctx, c, reply)
	for err != nil {
		if c.Name.function() && lacksFunction(err) {
			r.fn.load(ctx, s)
		}
		n, again := r.next(c.Name, err)
		if !again {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, r.ended(err)
		}
		c.Name = n
		out, err = r.c.Do(ctx, c, reply)
	}
	if err != nil {
		return nil, r.fail(c, withContext(ctx, err))
	}
	return out, nil
}

// replyCap is the room given to each call's reply in a batch: ratekit's
// scripts reply with four integers. A longer reply grows its own slice.
const replyCap = 4

// RunScripts runs calls with one DoMulti of FCALL, or of EVALSHA while
// functions are off (one round trip per server), then one DoMulti of
// EVALSHA for the calls that met a missing function (whose library it
// loads, once per script) or that the server refused for lack of the
// _RO command, then one DoMulti of EVAL for the calls that met NOSCRIPT,
// which loads the script where it was missing.
// It returns one result per call, in order; a call whose keys span slots
// gets its own error and the others still run, unless it is marked
// AnySlot and r is one node.
//
// Calls on one key run in the order given: a call that shares a key with
// an earlier call is sent in a later wave (its own DoMulti, and EVAL
// after NOSCRIPT), once the earlier one's is back, since a call retried
// as EVAL runs after the calls that followed it. Each RunScripts of a
// limiter puts no key in two calls, so it is one wave. A call the server
// refuses (CROSSSLOT included) holds nothing back: later calls on its
// keys still run.
func (r *Runner) RunScripts(ctx context.Context, calls []core.ScriptCall) []core.ScriptResult {
	out := make([]core.ScriptResult, len(calls))
	if len(calls) == 0 {
		return out
	}
	if r == nil || r.c == nil {
		failAll(out, r.unusable())
		return out
	}
	if err := ctx.Err(); err != nil {
		failAll(out, r.ended(err))
		return out
	}
	cmds := make([]Cmd, 0, len(calls))
	var index []int // cmds[j] runs calls[index[j]]; nil while j == index[j]
	single := r.SingleNode()
	for i, call := range calls {
		c := Cmd{Name: r.first(call.Script), Script: call.Script, Keys: call.Keys, Args: call.Args}
		if c.Name.function() {
			c.fn = r.fn.name(call.Script)
		}
		if err := checkSlots(call, single); err != nil {
			out[i].Err = r.fail(c, err)
			if index == nil {
				index = make([]int, i, len(calls))
				for j := range index {
					index[j] = j
				}
			}
			continue
		}
		if index != nil {
			index = append(index, i)
		}
		cmds = append(cmds, c)
	}
	if len(cmds) == 0 {
		return out
	}
	res := out // results in the order of cmds
	if index != nil {
		res = make([]core.ScriptResult, len(cmds))
	}
	replies := make([]int64, len(cmds)*replyCap)
	for j := range cmds {
		res[j].Reply = replies[j*replyCap : j*replyCap : (j+1)*replyCap]
	}
	r.send(ctx, cmds, res)
	for j := range res {
		if err := res[j].Err; err != nil {
			if isCrossSlot(err) && single {
				// A cluster behind one address: from now on keys share a
				// slot in every call. The server ran nothing of this one.
				r.single.Store(false)
				err = fmt.Errorf("%w: %w", slot.ErrCrossSlot, err)
			}
			res[j] = core.ScriptResult{Err: r.fail(cmds[j], withContext(ctx, err))}
		}
	}
	for j, i := range index {
		out[i] = res[j]
	}
	return out
}

// checkSlots refuses a call whose keys span slots, unless it is marked
// AnySlot and the server is one node (single).
func checkSlots(call core.ScriptCall, single bool) error {
	if call.AnySlot && single {
		return nil
	}
	return slot.Check(call.Keys)
}

// send runs cmds, leaving their outcomes in res: one DoMulti of EVALSHA,
// then one of EVAL for the commands that met NOSCRIPT, per wave (waves;
// retry). A command retried as EVAL runs after the commands that followed it in
// its DoMulti, so those must not touch its keys: a command on a key of an
// earlier command goes in a later wave, sent once the earlier wave is
// done. Nothing is sent for a wave once ctx has ended.
func (r *Runner) send(ctx context.Context, cmds []Cmd, res []core.ScriptResult) {
	wave, last := waves(cmds)
	if last == 0 {
		r.c.DoMulti(ctx, cmds, res)
		r.retry(ctx, cmds, res)
		return
	}
	var sub []Cmd
	var subRes []core.ScriptResult
	var at []int
	for w := 0; w <= last; w++ {
		sub, subRes, at = sub[:0], subRes[:0], at[:0]
		for j := range cmds {
			if wave[j] == w {
				sub = append(sub, cmds[j])
				subRes = append(subRes, core.ScriptResult{Reply: res[j].Reply})
				at = append(at, j)
			}
		}
		if err := ctx.Err(); err != nil && w > 0 {
			for _, j := range at {
				res[j] = core.ScriptResult{Err: err}
			}
			continue
		}
		r.c.DoMulti(ctx, sub, subRes)
		r.retry(ctx, sub, subRes)
		for k, j := range at {
			cmds[j], res[j] = sub[k], subRes[k]
		}
	}
}

// waves returns each command's wave and the last wave: wave 0 for a
// command that shares no key with an earlier one, else one more than the
// highest wave of the earlier commands that hold one of its keys. So no
// key is in two commands of one wave, and a key's commands go wave after
// wave in order. wave is nil when every command is in wave 0.
func waves(cmds []Cmd) (wave []int, last int) {
	if len(cmds) < 2 {
		return nil, 0
	}
	n := 0
	for _, c := range cmds {
		n += len(c.Keys)
	}
	next := make(map[string]int, n) // key -> 1 + the wave of its last command
	for j, c := range cmds {
		w := 0
		for _, k := range c.Keys {
			w = max(w, next[k])
		}
		for _, k := range c.Keys {
			next[k] = w + 1
		}
		if w > 0 && wave == nil {
			wave = make([]int, len(cmds))
		}
		if wave != nil {
			wave[j] = w
		}
		last = max(last, w)
	}
	return wave, last
}

// retry sends again, in one DoMulti per round, the commands of res that
// failed in a way next says another command may not (NOSCRIPT: as EVAL;
// a missing _RO command: as plain EVALSHA, then as EVAL if that meets
// NOSCRIPT), and leaves their outcome in res. It renames them in cmds.
func (r *Runner) retry(ctx context.Context, cmds []Cmd, res []core.ScriptResult) {
	var again []int
	var sub []Cmd
	var subRes []core.ScriptResult
	r.fn.loadMissing(ctx, cmds, res)
	for {
		again = again[:0]
		for j := range res {
			if res[j].Err == nil {
				continue
			}
			if n, ok := r.next(cmds[j].Name, res[j].Err); ok {
				cmds[j].Name = n
				again = append(again, j)
			}
		}
		if len(again) == 0 {
			return
		}
		if err := ctx.Err(); err != nil {
			for _, j := range again {
				res[j].Err = err
			}
			return
		}
		sub, subRes = sub[:0], subRes[:0]
		for _, j := range again {
			sub = append(sub, cmds[j])
			subRes = append(subRes, core.ScriptResult{Reply: res[j].Reply[:0]})
		}
		r.c.DoMulti(ctx, sub, subRes)
		for k, j := range again {
			res[j] = subRes[k]
		}
	}
}

func failAll(out []core.ScriptResult, err error) {
	for i := range out {
		out[i].Err = err
	}
}

// ended is the error of a call whose context ended before anything was
// sent.
func (r *Runner) ended(err error) error {
	return fmt.Errorf("%w: %s: %w", core.ErrStore, r.lib, err)
}

// fail wraps the error of command c.
func (r *Runner) fail(c Cmd, err error) error {
	if hint := hint(c.Name, err); hint != "" {
		return fmt.Errorf("%w: %s: script %q: %w: %s", core.ErrStore, r.lib, c.Script.Name(), err, hint)
	}
	return fmt.Errorf("%w: %s: script %q: %w", core.ErrStore, r.lib, c.Script.Name(), err)
}

// withContext returns err, a command's error, wrapping ctx's error too
// when ctx has ended, so that errors.Is(err, context.DeadlineExceeded)
// holds for a call that ran out of time however its client noticed: a
// client that gives its connection the context's deadline (redigo,
// go-redis with ContextTimeoutEnabled) fails the read with a net timeout,
// which may come a moment before the context reports its own end.
func withContext(ctx context.Context, err error) error {
	cerr := ctx.Err()
	var ne net.Error
	if d, ok := ctx.Deadline(); cerr == nil && ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(d) {
		cerr = context.DeadlineExceeded
	}
	if cerr == nil || errors.Is(err, cerr) {
		return err
	}
	return fmt.Errorf("%w: %w", cerr, err)
}

// hint names the option that helps when the server refuses a read-only
// script for being one: miniredis counts TIME as a write inside EVAL_RO.
// (A server without the _RO commands, Redis before 7.0, needs no option:
// next falls back.) And the version when a server-time script cannot
// write after reading TIME: Redis before 3.2 has no
// redis.replicate_commands, which prelude.lua's clock calls.
func hint(n Name, err error) string {
	switch msg := err.Error(); {
	case n.ReadOnly() && strings.Contains(msg, "not allowed in read-only scripts"):
		return "the server refused TIME in a read-only script (miniredis does): build the store with scriptproto.WithoutReadOnlyCommands()"
	case strings.Contains(msg, "Write commands not allowed after non deterministic commands"):
		return "the server cannot write after reading its clock (TIME) in a script (Redis older than 3.2): give the limiter a Clock, to decide on the client's time"
	}
	return ""
}

// lacksReadOnly reports whether err is the server's answer to an
// EVALSHA_RO or EVAL_RO that it has no such command: Redis before 7.0
// answers "ERR unknown command `EVALSHA_RO`, with args beginning with:
// ...", later ones (and proxies) "ERR unknown command 'evalsha_ro'", and
// some clients drop the "ERR ". The caller checks that the command was
// one of them.
func lacksReadOnly(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "ERR unknown command") || strings.HasPrefix(msg, "unknown command")
}

// isNoScript reports whether err is the server's NOSCRIPT error: every
// client library returns a server error as its text.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// isCrossSlot reports whether err is the server's CROSSSLOT error: a
// cluster refusing, before running it, a script whose keys span slots.
func isCrossSlot(err error) bool {
	return strings.HasPrefix(err.Error(), "CROSSSLOT")
}

// BadReply wraps err, a client library's report of a reply it cannot read
// as an array (a nil reply, a status, a parse error), with
// core.ErrUnexpectedReply.
func BadReply(err error) error {
	return fmt.Errorf("%w: %w", core.ErrUnexpectedReply, err)
}

// DecodeAny appends to reply the integers of v, a reply as go-redis and
// redigo return it: an array ([]any) of int64, nothing else.
func DecodeAny(v any, reply []int64) ([]int64, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: replied %T, want an array of integers", core.ErrUnexpectedReply, v)
	}
	reply = slices.Grow(reply, len(arr)) // one allocation for a batch's long reply
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return nil, fmt.Errorf("%w: reply element %d is %T, want an integer", core.ErrUnexpectedReply, i, e)
		}
		reply = append(reply, n)
	}
	return reply, nil
}
