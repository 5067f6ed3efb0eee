package failsafe

// OnCallDone makes l call f each time a store call run in its own
// goroutine has finished, just before that goroutine ends. Set it before
// the first call.
func OnCallDone(l *Limiter, f func()) { l.calls.Done = f }

// InFlight is the number of store calls running, abandoned ones included.
func InFlight(l *Limiter) int64 { return l.calls.InFlight() }
