package engine

import (
	_ "embed"
	"fmt"
	"regexp"
	"strconv"

	"github.com/ratekit/ratekit/internal/params"
)

// prelude is the Lua every composed script starts with: clock, idiv,
// read_state, state, ttl_ms and commit, the Lua side of internal/params.
//
//go:embed prelude.lua
var prelude string

// The rules of ratekit.Carry, as a bucket's step takes them (its carry
// parameter): what a key written under another limit keeps.
const (
	CarryUsed      = 0
	CarryAvailable = 1
)

// luaConstants are the numbers Lua and Go share, written once, here: the
// composer replaces each name, wherever it stands in a prelude or a step
// (MODE_PEEK, MAX_STATE), by its value, so that the server reads a literal
// (no upvalue, no global) and no number is copied by hand.
var luaConstants = func() map[string]int64 {
	m := map[string]int64{
		"MAX_STATE":       params.MaxState,
		"MAX_COUNT":       params.MaxCount,
		"MAX_SPAN":        params.MaxSpan,
		"CLOCK_SLACK_MS":  params.ClockSlackMillis,
		"CORRUPT":         params.Corrupt,
		"CARRY_USED":      CarryUsed,
		"CARRY_AVAILABLE": CarryAvailable,
	}
	for mode, name := range modeNames {
		m[name] = int64(mode)
	}
	return m
}()

// constantName finds the names inject replaces, and any other name of
// their form, which is a mistake (MODE_PEKE).
var constantName = regexp.MustCompile(`\b(MODE_[A-Z_]+|CARRY_[A-Z_]+|MAX_STATE|MAX_COUNT|MAX_SPAN|CLOCK_SLACK_MS|CORRUPT)\b`)

// inject returns lua with every shared constant's name replaced by its
// value. An unknown MODE_ name panics: scripts are composed when the
// program starts, so every test fails.
func inject(lua string) string {
	return constantName.ReplaceAllStringFunc(lua, func(name string) string {
		v, ok := luaConstants[name]
		if !ok {
			panic(fmt.Sprintf("engine: unknown Lua constant %s", name))
		}
		return strconv.FormatInt(v, 10)
	})
}
