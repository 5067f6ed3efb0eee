// Package miniredistest runs the Redis stores against miniredis: the
// adapter check for read-only scripts whose server refuses TIME in them
// (adaptertest.Miniredis), and the conformance suite in server-time mode,
// where miniredis lets the suite set the server's clock. It has no code
// outside its tests. It is a module of its own so that miniredis and
// gopher-lua, which only these tests use, stay out of the store modules'
// go.mod files and so out of every user's go.sum (docs/design.md,
// "Modules").
package miniredistest
