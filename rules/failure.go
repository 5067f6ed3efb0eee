package rules

import (
	"fmt"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
)

// failureModes are rate_limit.failure_mode's values, by failsafe's Mode.
var failureModes = []struct {
	name string
	mode failsafe.Mode
}{
	{"open", failsafe.FailOpen},
	{"closed", failsafe.FailClosed},
	{"local", failsafe.FailLocal},
}

// FailureModes are the values of a rule's failure_mode (Rule.FailureMode):
// "open", "closed", "local".
func FailureModes() []string {
	out := make([]string, len(failureModes))
	for i, m := range failureModes {
		out[i] = m.name
	}
	return out
}

func failureMode(name string) failsafe.Mode {
	for _, m := range failureModes {
		if m.name == name {
			return m.mode
		}
	}
	panic("rules: unknown failure_mode " + name) // Parse refused it
}

// guardKey names a failsafe limiter shared by every rule of one
// algorithm (or the calendar limiter) and one failure mode.
type guardKey struct {
	limiter string
	mode    string
}

// guard returns lim, the limiter of rule (wrapped), behind a failsafe.Limiter of
// the rule's failure mode. base names lim when it is one of the limiters New
// built, shared by every rule of its algorithm: so is its guard, built once,
// so that what it knows of the store outlives a reload. A rule of several
// limits or a penalty (base ""), whose policy each Set builds, gets a guard
// of its own; local is then its policy on Options.LocalStore.
func (r *Rules) guard(rule *Rule, lim core.Limiter, base string, local func() (core.Limiter, error)) (core.Limiter, error) {
	mode := failureMode(rule.FailureMode)
	if mode == failsafe.FailLocal && r.opts.LocalStore == nil {
		return nil, &ConfigError{File: rule.File, Line: rule.failureAt.line, Field: rule.failureAt.field, Msg: "failure_mode local needs Options.LocalStore, the store it decides on while the store fails"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := guardKey{base, rule.FailureMode}
	if g, ok := r.guards[k]; ok && base != "" {
		return g, nil
	}
	cfg := r.opts.Failsafe
	cfg.Limiter, cfg.Mode, cfg.Local = lim, mode, nil
	if mode == failsafe.FailLocal {
		l, err := local()
		if err != nil {
			return nil, err
		}
		cfg.Local = l
	}
	g, err := failsafe.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: Options.Failsafe: %w", rule.File, rule.Line, err)
	}
	if base != "" {
		r.guards[k] = g
	}
	return g, nil
}

// localLimiter returns the limiter of limit j of algorithm alg on
// Options.LocalStore, built once: the local twin of limiterAt's. Called
// with r.mu held.
func (r *Rules) localLimiter(alg string, j int, calendar bool) (*ratekit.Limiter, error) {
	l, err := r.limiterOn(r.opts.LocalStore, r.local, alg, j, calendar)
	if err != nil {
		return nil, fmt.Errorf("Options.LocalStore: %w", err)
	}
	return l, nil
}
