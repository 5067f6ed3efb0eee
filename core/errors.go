package core

import "errors"

// Sentinel errors. Every error a limiter, a policy, a store or a wrapper of
// them (failsafe, denycache, hotkey, httplimit and grpclimit keys)
// returns wraps one of them (with %w), so callers can tell bad input from
// a failing store with errors.Is. The few errors other packages export
// say in their docs which of these they come with, if any:
// failsafe.ErrBusy (with ErrStore), ratekit.ErrUnknownTier (a tier name
// Tiers does not hold: none) and httplimit.ErrRemoteNotIP (the same value
// as grpclimit.ErrRemoteNotIP: none).
var (
	// ErrInvalidConfig reports a bad configuration; the message names the
	// field. Constructors return it, so that no limiter is built from a bad
	// configuration; a limiter declared but never built by its New (a zero
	// value) returns it from every call, and so does a HeaderKey or a
	// Metadata key with bad settings.
	ErrInvalidConfig = errors.New("ratekit: invalid config")
	// ErrInvalidKey reports a key that cannot be used: empty, or longer than
	// MaxKeyLen bytes.
	ErrInvalidKey = errors.New("ratekit: invalid key")
	// ErrInvalidCost reports a cost n that is not positive, or larger than
	// the limiter could ever allow at once.
	ErrInvalidCost = errors.New("ratekit: invalid cost")
	// ErrInvalidLease reports a lease that no limiter could have issued: a
	// zero lease (what a denied acquire returns), or one whose id or cost
	// has the wrong form. A well-formed lease that is not live (expired,
	// released, or never issued) is not an error: releasing it says so.
	ErrInvalidLease = errors.New("ratekit: invalid lease")
	// ErrInvalidTime reports a time from an injected Clock outside the range
	// ratekit computes in exactly (1970 to 2112).
	ErrInvalidTime = errors.New("ratekit: invalid time")
	// ErrStore reports a failure of the store: a network error, a server
	// error, a context ending, or a reply of the wrong shape. The store's
	// own error is wrapped too, so errors.Is(err, context.DeadlineExceeded)
	// works through it.
	ErrStore = errors.New("ratekit: store failed")
	// ErrCorruptState reports state at a key that the limiter's algorithm
	// did not write and cannot read exactly: a value of another shape or
	// type, or numbers beyond what it computes with. The message names the
	// algorithm and the key. It is not a store failure (it does not wrap
	// ErrStore): the store answered, the key holds something else. Reset
	// the key, or give the limiter a Prefix of its own.
	ErrCorruptState = errors.New("ratekit: state is corrupt")
	// ErrUnexpectedReply reports a script reply of the wrong shape. It comes
	// wrapped together with ErrStore.
	ErrUnexpectedReply = errors.New("ratekit: unexpected script reply")
)

// MaxKeyLen is the longest key, in bytes, a limiter accepts.
const MaxKeyLen = 64 << 10
