// Package faulttest holds ratekit's failure, contention and abuse tests
// against real redis-server processes started by the tests: SIGKILL and
// restart, SIGSTOP and SIGCONT, SCRIPT FLUSH under traffic, passwords, and
// many clients racing for one key; and the httplimit middleware through
// each Redis client. It has no code outside its tests; the figures its
// tests log are recorded in docs/RELIABILITY.md. It is a module of its
// own, since it uses every Redis client: the library does not require
// them.
package faulttest
