package otelratekit

import (
	"fmt"

	"github.com/ratekit/ratekit/core"
)

// What a Telemetry, Limiter, Concurrency or Store that was not built by
// its constructor answers: every call an error wrapping
// core.ErrInvalidConfig (a Store's calls core.ErrStore wrapping that, as
// any store that cannot run scripts answers), every description empty,
// and 0 from MaxCost and Limit.

var (
	errZeroTelemetry = fmt.Errorf("%w: a zero otelratekit.Telemetry: build it with otelratekit.New", core.ErrInvalidConfig)
	errZero          = fmt.Errorf("%w: an otelratekit wrapper not built by its Telemetry", core.ErrInvalidConfig)
	errZeroStore     = fmt.Errorf("%w: %w", core.ErrStore, errZero)
)

func (t *Telemetry) built() bool   { return t != nil && t.tracer != nil }
func (l *Limiter) built() bool     { return l != nil && l.next != nil && l.t.built() }
func (c *Concurrency) built() bool { return c != nil && c.next != nil && c.l.t.built() }
func (s *Store) built() bool       { return s != nil && s.next != nil && s.t.built() }
