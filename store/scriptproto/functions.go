package scriptproto

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ratekit/ratekit/core"
)

// libPrefix begins the name of every library and function of ratekit's
// scripts.
const libPrefix = "ratekit_"

// A Loader is a [Client] that can load a Redis function library: Load
// sends FUNCTION LOAD code to every primary server the client sends
// commands to (one, for a client of one server) and returns each one's
// error, nil where it loaded. The Runner calls it with a [Library]; a
// Client that is not a Loader runs every script as EVALSHA.
type Loader interface {
	Load(ctx context.Context, code string) []error
}

// WithoutFunctions runs every script as EVALSHA, never as a Redis
// function, for a server where functions must not be loaded (an operator
// who keeps FUNCTION LOAD for administrators, a proxy that lets FCALL
// through but not FUNCTION). Without it, a Runner whose Client is a
// [Loader] calls functions first, and falls back to EVALSHA on its own on
// a server that has none or refuses them (see Redis functions, in the
// package doc).
func WithoutFunctions() Option {
	return func(r *Runner) { r.fn.off.Store(true) }
}

// Function returns the name of s's function in its [Library]: "ratekit_"
// and s's SHA-1, with "_ro" after it when s is read-only: the function
// flagged no-writes, which FCALL_RO calls.
func Function(s *core.Script) string {
	if s.ReadOnly() {
		return libPrefix + s.SHA1() + "_ro"
	}
	return libPrefix + s.SHA1()
}

// Library returns the Redis function library of s, as FUNCTION LOAD takes
// it: its head ([core.Script.Head]) at the top level, run once when the
// library is loaded, and its body in a function of KEYS and ARGV, which
// the library registers twice: as the function of s, and, flagged
// no-writes, as the function of its read-only twin ([Function] names
// both: a read-only script and a read-write one of the same source share
// their library). An operator who keeps FUNCTION LOAD
// for administrators may load it ahead: the Runner then only calls it.
func Library(s *core.Script) string {
	var b strings.Builder
	name := libPrefix + s.SHA1()
	b.Grow(len(s.Lua()) + 256)
	b.WriteString("#!lua name=" + name + "\n")
	if h := s.Head(); h != "" {
		b.WriteString(h + "\n")
	}
	b.WriteString("local function call(KEYS, ARGV)\n")
	b.WriteString(s.Body())
	b.WriteString("\nend\n")
	b.WriteString("redis.register_function('" + name + "', call)\n")
	b.WriteString("redis.register_function{function_name = '" + name + "_ro', callback = call, flags = {'no-writes'}}\n")
	return b.String()
}

// functions is what a Runner knows of Redis functions.
type functions struct {
	loader Loader // nil when the Client is not a Loader
	// off is set once a server has no functions or refused them, or by
	// WithoutFunctions: every call goes as EVALSHA from then on.
	off atomic.Bool
	// loading is held while one caller loads a library: the Runner's
	// other callers that meet a missing function go as EVALSHA meanwhile
	// instead of loading it again.
	loading atomic.Bool
	// names holds each script's Function, made once.
	names sync.Map // *core.Script -> string
}

// name returns Function(s), made once per script.
func (f *functions) name(s *core.Script) string {
	if v, ok := f.names.Load(s); ok {
		return v.(string)
	}
	v, _ := f.names.LoadOrStore(s, Function(s))
	return v.(string)
}

// fallBack reports whether a call of a function that failed with err goes
// again as EVALSHA: the server lacks the function, or functions, or
// refuses them; for the last two, it turns functions off.
func (f *functions) fallBack(err error) bool {
	switch {
	case lacksFunction(err):
		return true
	case lacksFunctions(err):
		f.off.Store(true)
		return true
	}
	return false
}

// load loads s's library, unless another caller of the Runner is loading
// one: the call that met a missing function goes as EVALSHA either way.
// A refusal turns functions off; a failure that is not the server's
// answer (the network, ctx) changes nothing, and the next call that meets
// a missing function loads again.
func (f *functions) load(ctx context.Context, s *core.Script) {
	if f.loader == nil || f.off.Load() || !f.loading.CompareAndSwap(false, true) {
		return
	}
	defer f.loading.Store(false)
	for _, err := range f.loader.Load(ctx, Library(s)) {
		if err == nil || strings.Contains(err.Error(), "already exists") || strings.HasPrefix(err.Error(), "READONLY") {
			// Loaded; or loaded before (the name is the code's hash); or a
			// replica, which gets it from its primary.
			continue
		}
		if refusal(err) {
			f.off.Store(true)
			return
		}
	}
}

// loadMissing loads the library of each script of cmds whose call met a
// missing function (res), once per script.
func (f *functions) loadMissing(ctx context.Context, cmds []Cmd, res []core.ScriptResult) {
	var done *core.Script // a batch is usually of one script
	for j := range res {
		if err := res[j].Err; err != nil && cmds[j].Name.function() && lacksFunction(err) && cmds[j].Script != done {
			done = cmds[j].Script
			f.load(ctx, done)
		}
	}
}

// lacksFunction reports whether err is the server's answer to FCALL that
// it has no function of that name: "ERR Function not found".
func lacksFunction(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "ERR Function not found") || strings.HasPrefix(msg, "Function not found")
}

// lacksFunctions reports whether err is the server's answer to FCALL that
// it has no functions (Redis before 7.0, miniredis: "ERR unknown
// command") or that the user may not call them (NOPERM).
func lacksFunctions(err error) bool {
	msg := err.Error()
	return lacksReadOnly(err) || strings.HasPrefix(msg, "NOPERM")
}

// refusal reports whether err is a server's error reply (a word in
// capitals, then a space: "ERR ...", "NOPERM ...", "OOM ..."), not a
// failure to reach it (the network's errors, the context's).
func refusal(err error) bool {
	msg := err.Error()
	i := strings.IndexByte(msg, ' ')
	if i < 2 {
		return false
	}
	for _, c := range msg[:i] {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}
