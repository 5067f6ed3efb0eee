package core

import (
	"crypto/sha1"
	"encoding/hex"
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
	lua      string
	sha1     string
	twin     TwinFunc
	readOnly bool
}

// NewScript returns a script named name (for errors and metrics) with the
// given Lua source and Go twin. A readOnly script never writes: the Redis
// adapters run it with EVALSHA_RO / EVAL_RO, so that a write attempt fails on
// the server instead of changing state. The SHA1 of lua is computed once here.
func NewScript(name, lua string, twin TwinFunc, readOnly bool) *Script {
	sum := sha1.Sum([]byte(lua))
	return &Script{
		name:     name,
		lua:      lua,
		sha1:     hex.EncodeToString(sum[:]),
		twin:     twin,
		readOnly: readOnly,
	}
}

// Name returns the script's name.
func (s *Script) Name() string { return s.name }

// Lua returns the script's Lua source.
func (s *Script) Lua() string { return s.lua }

// SHA1 returns the lowercase hex SHA1 of the Lua source, the name EVALSHA
// knows the script by.
func (s *Script) SHA1() string { return s.sha1 }

// Twin returns the script's Go twin, or nil when it has none.
func (s *Script) Twin() TwinFunc { return s.twin }

// ReadOnly reports whether the script never writes.
func (s *Script) ReadOnly() bool { return s.readOnly }
