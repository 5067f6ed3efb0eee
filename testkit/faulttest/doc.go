// Package faulttest holds ratekit's failure, contention and abuse tests
// against real redis-server processes started by the tests: SIGKILL and
// restart, SIGSTOP and SIGCONT, SCRIPT FLUSH under traffic, passwords,
// many clients racing for one key, the concurrency limiter across OS
// processes (this test binary run again as workers) and after a holder's
// SIGKILL, hot-key budgets (hotkey.Budget) across OS processes; and the httplimit middleware through each Redis client, and through an outage
// (TestOutage: SIGSTOP, SIGKILL and restart, for each failure mode); and
// programs run under GODEBUG=fips140=only (testdata/fips). It has no code
// outside its tests and those programs; the figures its tests log are recorded in
// docs/RELIABILITY.md. It is a module of its own, since it uses every
// Redis client: the library does not require them.
package faulttest
