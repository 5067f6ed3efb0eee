// Package inproc is what the engine asks of a store that keeps its state
// in this process (the memory store) to decide on one key without a
// script: lock the key, lend a core.Tx for it, unlock. The engine then
// runs the algorithm's step (the same Go function the composed script's
// twin runs) and commits its staged state through that Tx, and skips
// what a script call costs: the script's arguments, the reply buffer, the
// twin's decoding of both.
//
// The path belongs to one store value, as core.KeyCopier's promise does:
// a type that embeds the store (a wrapper that records or alters its
// RunScript) inherits InProcessOf but not the right to be bypassed, so the
// engine uses a Store s only when the runner InProcessOf returns is s
// itself. The path's methods are on the Path InProcessOf returns, a value
// of a type the store does not export: they are not part of the store's
// API, and a program cannot lock a key by mistake.
package inproc

import "github.com/ratekit/ratekit/core"

// Store is a core.ScriptRunner that also runs one key's step in process.
type Store interface {
	core.ScriptRunner
	// InProcessOf returns the store's own receiver, as a ScriptRunner
	// (the engine takes the in-process path only for that value), and
	// the path.
	InProcessOf() (core.ScriptRunner, Path)
}

// Path is a Store's in-process path.
type Path interface {
	// PrefixHash returns what Lock takes as ph for prefix: the caller
	// computes it once per prefix.
	PrefixHash(prefix string) uint64
	// Lock locks the storage key keyspace.Key(prefix, key, "") and
	// returns a Tx on it, at the store's time, and the storage key, both
	// valid until Unlock; or, locking nothing, the error RunScript would
	// return before running a script (the store's clock out of range).
	// ph is PrefixHash(prefix). The caller has checked key, and that its
	// context has not ended.
	Lock(prefix string, ph uint64, key string) (tx core.Tx, skey string, err error)
	// Unlock releases the key tx was locked for. It returns the error
	// RunScript would have returned for a script named name that did
	// what the caller did under the lock: a misuse of the Tx, or a panic
	// (panicked is what recover returned, nil when none), each wrapping
	// core.ErrStore.
	Unlock(tx core.Tx, name string, panicked any) error
}
