// Package faulttest holds ratekit's failure, contention and abuse tests
// against real redis-server processes started by the tests: SIGKILL and
// restart, SIGSTOP and SIGCONT, SCRIPT FLUSH under traffic, passwords, and
// many clients racing for one key. It has no code outside its tests; the
// figures its tests log are recorded in docs/RELIABILITY.md.
package faulttest
