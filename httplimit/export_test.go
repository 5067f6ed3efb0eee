package httplimit

import (
	"net/http"
	"time"
)

// NewWithClock is New with the clock that paces log lines.
func NewWithClock(cfg Config, now func() time.Time) (func(http.Handler) http.Handler, error) {
	return newMiddleware(cfg, now)
}

// LogEvery is the least time between two lines logged at slog.LevelError.
const LogEvery = logEvery
