package core

import "time"

// Params are the parameters of one limit given with a request
// (Request.Params) instead of those its limiter was built with. Each
// algorithm package builds them from its Config with NewParams, which
// checks them as New checks a Config, with the same errors; a limiter
// refuses Params that its own algorithm's package did not build, with an
// error wrapping ErrInvalidConfig. Build them once per distinct limit
// (when a customer's contract or a rules file is loaded) and give them
// with every request: a decision with Params made in advance costs no
// more than one with the limiter's own.
//
// Params are comparable: two built from equal configurations are equal,
// so a cache (denycache, hotkey) keeps what it learned of a key for as
// long as the key's limits stay the same.
type Params interface {
	// Algorithm names the algorithm the parameters are for: its package's
	// name ("tokenbucket").
	Algorithm() string
	// Limit is what a Decision made with them reports as its Limit: the
	// largest cost a request may have.
	Limit() int64
	// Window is what a Decision made with them reports as its Window.
	Window() time.Duration
	// String describes the parameters: "tokenbucket(capacity=10,
	// refill_rate=1, refill_interval=1s)".
	String() string
}
