package otelratekit

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
)

// The attribute keys this package records (see the package doc), for
// views and queries.
const (
	// AttrLimiterName is the name given to Telemetry.Limiter.
	AttrLimiterName = attribute.Key("ratekit.limiter.name")
	// AttrAlgorithm is the limiter's algorithm: "tokenbucket", "gcra", ...
	AttrAlgorithm = attribute.Key("ratekit.algorithm")
	// AttrStore is the store's name: "memory", "goredis", ...
	AttrStore = attribute.Key("ratekit.store")
	// AttrOutcome is a decision's outcome, one of the Outcome values
	// below.
	AttrOutcome = attribute.Key("ratekit.outcome")
	// AttrLimitName is the name of one limit of a policy
	// (ratekit.Limit.Name), in ratekit.policy.limit.decisions.
	AttrLimitName = attribute.Key("ratekit.limit.name")
	// AttrBlocked is true on a policy's denial made while a penalty
	// blocks the key (core.Decision.Blocked).
	AttrBlocked = attribute.Key("ratekit.blocked")
	// AttrScript is the name of the script a store call ran.
	AttrScript = attribute.Key("ratekit.script")
	// AttrStoreOperation is "run_script" (one script) or "run_scripts" (a
	// pipelined batch).
	AttrStoreOperation = attribute.Key("ratekit.store.operation")
	// AttrFailsafeState is a failsafe limiter's state: "up", "down" or
	// "probing".
	AttrFailsafeState = attribute.Key("ratekit.failsafe.state")
	// AttrCost is a request's cost (spans only).
	AttrCost = attribute.Key("ratekit.cost")
	// AttrBatchSize is the number of requests or calls in a batch (spans
	// only).
	AttrBatchSize = attribute.Key("ratekit.batch.size")
	// AttrLimit is a decision's Limit (spans only).
	AttrLimit = attribute.Key("ratekit.limit")
	// AttrRemaining is a decision's Remaining (spans only).
	AttrRemaining = attribute.Key("ratekit.remaining")
	// AttrRetryAfter is a decision's RetryAfter in seconds (spans only).
	AttrRetryAfter = attribute.Key("ratekit.retry_after")
	// AttrDenied names the enforced limits of a policy that denied a
	// request (spans only).
	AttrDenied = attribute.Key("ratekit.denied")
	// AttrShadowDenied names the shadow limits of a policy that would have
	// denied a request (spans only).
	AttrShadowDenied = attribute.Key("ratekit.shadow_denied")
	// AttrErrorType is OpenTelemetry's error.type: see ErrorType.
	AttrErrorType = attribute.Key("error.type")
)

// The values of ratekit.outcome. In ratekit.decisions, a request's:
// allowed, denied, shadow or error. In ratekit.policy.limit.decisions,
// one limit's part in a policy's request: allowed, denied, not_counted or
// shadow, so that a limit's "allowed" counts exactly what it counted.
const (
	// OutcomeAllowed: the request may proceed, and was counted (by each
	// limit of a policy that reports it for its part).
	OutcomeAllowed = "allowed"
	// OutcomeDenied: the request was denied, and counted nothing; of a
	// limit, that it denied the request (or, while a penalty blocks the
	// key, that it would).
	OutcomeDenied = "denied"
	// OutcomeNotCounted, of a limit only: the limit would have allowed
	// the request, but another limit (or a penalty block) denied it, so
	// this one counted nothing.
	OutcomeNotCounted = "not_counted"
	// OutcomeShadow: of a request, that it was allowed although a shadow
	// limit of its policy would have denied it; of a limit, that it runs
	// in shadow and would have denied the request (it counted nothing).
	OutcomeShadow = "shadow"
	// OutcomeError: the limiter returned an error (error.type says which).
	OutcomeError = "error"
)

// Other is the name recorded for an algorithm or a store that does not say
// its own: a core.Limiter that is not a ratekit limiter, a store that is
// not a core.StoreNamer.
const Other = "other"

// ErrorType returns the error.type this package records for err: a short
// name from a fixed list (see the package doc), never the error's text.
func ErrorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, failsafe.ErrBusy):
		return "busy"
	case errors.Is(err, core.ErrUnexpectedReply):
		return "unexpected_reply"
	case errors.Is(err, core.ErrCorruptState):
		return "corrupt_state"
	case errors.Is(err, core.ErrInvalidLease): // before the key: a lease's bad Key is both
		return "invalid_lease"
	case errors.Is(err, core.ErrInvalidKey):
		return "invalid_key"
	case errors.Is(err, core.ErrInvalidCost):
		return "invalid_cost"
	case errors.Is(err, core.ErrInvalidTime):
		return "invalid_time"
	case errors.Is(err, core.ErrInvalidConfig):
		return "invalid_config"
	case errors.Is(err, core.ErrStore):
		return "store"
	}
	return "_OTHER"
}
