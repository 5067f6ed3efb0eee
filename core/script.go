package core

import (
	"crypto/fips140"
	"crypto/sha1"
	"encoding/hex"
	"sync"
)

// TwinFunc is the Go twin of a script's Lua source: the same decision, made
// against a [Tx] instead of Redis. keys, args and reply are exactly those
// passed to [ScriptRunner.RunScript]; the twin appends its reply to reply
// and returns it. A twin must make the same reply as the Lua source for
// every state, time and argument, and must not retain tx, keys, args, reply
// or any slice obtained from tx after it returns.
type TwinFunc func(tx Tx, keys []string, args []int64, reply []int64) ([]int64, error)

// Script is one atomic algorithm step: Lua source for servers and a Go twin
// for the memory store. Scripts are immutable and safe for concurrent use;
// build them once with [NewScript], usually as package variables.
type Script struct {
	name     string
	lua      string // head, a newline, body; body alone without a head
	head     string
	body     string
	twin     TwinFunc
	readOnly bool

	sha1Once sync.Once
	sha1     string // set by sha1Once
}

// NewScript returns a script named name (for errors and metrics) with the
// given Lua source and Go twin. A readOnly script never writes: the Redis
// adapters run it with EVALSHA_RO / EVAL_RO, so that a write attempt fails on
// the server instead of changing state. NewScript computes no hash: see
// [Script.SHA1].
func NewScript(name, lua string, twin TwinFunc, readOnly bool) *Script {
	return &Script{
		name:     name,
		lua:      lua,
		body:     lua,
		twin:     twin,
		readOnly: readOnly,
	}
}

// NewSplitScript returns a script whose Lua source is head, a newline,
// then body: head only defines what body uses (local functions, local
// variables, no call of anything but those), and body is what each call
// runs. A Redis store that runs scripts as Redis functions loads head
// once per server, in the script's library, and runs only body at each
// call; EVALSHA runs the whole source at each call, head included. head
// reads no global when it runs: a library's top level may not (Redis
// gives it none but redis). Otherwise it is [NewScript].
func NewSplitScript(name, head, body string, twin TwinFunc, readOnly bool) *Script {
	s := NewScript(name, head+"\n"+body, twin, readOnly)
	s.head, s.body = head, body
	return s
}

// Name returns the script's name.
func (s *Script) Name() string { return s.name }

// Lua returns the script's Lua source.
func (s *Script) Lua() string { return s.lua }

// Head returns what a function library runs once, when it is loaded: the
// head given to [NewSplitScript], "" for a script made by [NewScript].
func (s *Script) Head() string { return s.head }

// Body returns what each call runs: the body given to [NewSplitScript],
// the whole source for a script made by [NewScript].
func (s *Script) Body() string { return s.body }

// SHA1 returns the lowercase hex SHA-1 of the Lua source, the name EVALSHA
// knows the script by. It is computed once, on the first call, never at
// package initialisation: a Redis store makes that call when it first
// sends the script; the memory store never does.
//
// Under GODEBUG=fips140=only, where crypto/sha1 panics, SHA1 computes the
// same hash inside [fips140.WithoutEnforcement], which Go provides for
// non-approved algorithms used for no cryptographic purpose: the hash only
// names the script in the server's script cache, as Redis names every
// script it is sent (EVAL included), and protects nothing. So the Redis
// stores keep sending EVALSHA under fips140=only; docs/design.md gives
// what EVAL instead would cost.
func (s *Script) SHA1() string {
	s.sha1Once.Do(func() {
		fips140.WithoutEnforcement(func() {
			sum := sha1.Sum([]byte(s.lua))
			s.sha1 = hex.EncodeToString(sum[:])
		})
	})
	return s.sha1
}

// Twin returns the script's Go twin, or nil when it has none.
func (s *Script) Twin() TwinFunc { return s.twin }

// ReadOnly reports whether the script never writes.
func (s *Script) ReadOnly() bool { return s.readOnly }
