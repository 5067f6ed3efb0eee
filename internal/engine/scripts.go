package engine

import (
	_ "embed"

	"github.com/ratekit/ratekit/core"
)

// prelude is the Lua every algorithm's step starts with: clock, read_state,
// ttl_ms and write_state, the Lua side of internal/params.
//
//go:embed prelude.lua
var prelude string

// NewScripts returns an algorithm's two scripts: allow, which may write,
// and peek (read-only, EVALSHA_RO on Redis), both the prelude followed by
// step, with twin as their Go twin.
func NewScripts(name, step string, twin core.TwinFunc) (allow, peek *core.Script) {
	lua := prelude + "-- " + name + "\n" + step
	return core.NewScript(name, lua, twin, false), core.NewScript(name, lua, twin, true)
}
