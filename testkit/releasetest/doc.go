// Package releasetest checks that ratekit's modules work as released: it
// applies the release step (make release) to a copy of the repository,
// serves every library module at that version from a file-based module
// proxy built from the copy, and builds and runs, on a real redis-server,
// a program in a fresh module with no replace directive that requires
// them all from that proxy (docs/design.md, "Releasing"). It has no code
// outside its tests. It is a module of its own so that golang.org/x/mod,
// which builds the proxy's zips, is no requirement of the library.
package releasetest
