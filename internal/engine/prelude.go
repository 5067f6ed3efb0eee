package engine

import _ "embed"

// prelude is the Lua every composed script starts with: clock, read_state,
// ttl_ms and write_state, the Lua side of internal/params.
//
//go:embed prelude.lua
var prelude string
