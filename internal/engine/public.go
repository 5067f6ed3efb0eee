package engine

import "github.com/ratekit/ratekit/core"

// The public limiter type, *ratekit.Limiter, is declared in package
// ratekit, which imports this one; the algorithm packages return it and
// cannot build it (its fields are ratekit's). Go gives a package no other
// way to build another package's type with unexported fields than a
// function that package hands over, so package ratekit hands these two
// over once, when it is initialised (SetPublic), before any algorithm
// package can run: they are set once and never changed.
var (
	wrap   func(*Engine) any
	unwrap func(any) *Engine
)

// SetPublic is called once, by package ratekit's initialisation, with
// the functions that make its *Limiter from an Engine and find the Engine
// of one (nil for anything else).
func SetPublic(w func(*Engine) any, u func(any) *Engine) { wrap, unwrap = w, u }

// Public returns e's public limiter: *ratekit.Limiter.
func Public[T any](e *Engine) T { return wrap(e).(T) }

// Of returns the Engine of a public limiter, nil for any other value, or
// a limiter not built by its New.
func Of(l any) *Engine { return unwrap(l) }

// Build returns the public limiter (T: *ratekit.Limiter) of one limit on
// store, deciding at clock's time (nil: the store's): what every
// algorithm's New returns. An error wraps core.ErrInvalidConfig.
func Build[T any](store core.ScriptRunner, clock core.Clock, l Limit) (T, error) {
	e, err := New(Config{Store: store, Clock: clock, Limits: []Limit{l}})
	if err != nil {
		var zero T
		return zero, err
	}
	return Public[T](e), nil
}
