package engine

import _ "embed"

// prelude is the Lua every composed script starts with: clock, idiv,
// read_state, state, ttl_ms and commit, the Lua side of internal/params.
//
//go:embed prelude.lua
var prelude string
