package otelratekit

import "time"

// SetNow makes t measure store calls with now instead of time.Now. Set it
// before the first call.
func SetNow(t *Telemetry, now func() time.Time) { t.now = now }
