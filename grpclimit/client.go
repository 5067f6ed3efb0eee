package grpclimit

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit/core"
)

// RetryConfig configures UnaryClientInterceptor.
type RetryConfig struct {
	// MaxAttempts is the most times a call is made, the first included:
	// 0 means 3; 1 never retries.
	MaxAttempts int
	// MaxWait is the longest wait the client accepts: a denial that asks
	// for longer is returned at once. 0 means 10 s.
	MaxWait time.Duration
}

// UnaryClientInterceptor returns a client interceptor that honours a
// server's retry advice: when a call is answered codes.ResourceExhausted
// with an errdetails.RetryInfo (as grpclimit's server interceptors
// answer a denial), it waits the RetryDelay and calls again, up to
// MaxAttempts in all. It returns the denial at once when the wait is
// longer than MaxWait or would pass the call's deadline, and any other
// error as it is. Such a denial was decided before the server's handler
// ran, so calling again runs the handler at most once. An error wraps
// core.ErrInvalidConfig.
func UnaryClientInterceptor(cfg RetryConfig) (grpc.UnaryClientInterceptor, error) {
	r, err := newRetrier(cfg)
	if err != nil {
		return nil, err
	}
	return r.intercept, nil
}

type retrier struct {
	cfg RetryConfig
	// sleep waits d or until ctx ends (then its error).
	sleep func(ctx context.Context, d time.Duration) error
}

func newRetrier(cfg RetryConfig) (*retrier, error) {
	if cfg.MaxAttempts < 0 || cfg.MaxWait < 0 {
		return nil, fmt.Errorf("%w: grpclimit: RetryConfig.MaxAttempts and MaxWait must not be negative", core.ErrInvalidConfig)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = 10 * time.Second
	}
	return &retrier{cfg: cfg, sleep: sleep}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *retrier) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	for attempt := 1; ; attempt++ {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil || attempt >= r.cfg.MaxAttempts {
			return err
		}
		wait, ok := RetryDelay(err)
		if !ok || wait > r.cfg.MaxWait {
			return err
		}
		if dl, has := ctx.Deadline(); has && time.Until(dl) < wait {
			return err
		}
		if r.sleep(ctx, wait) != nil {
			return err
		}
	}
}

// RetryDelay returns the wait a server advises before calling again: the
// RetryDelay of err's errdetails.RetryInfo when err is a
// codes.ResourceExhausted status that has one.
func RetryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			if err := ri.GetRetryDelay().CheckValid(); err != nil {
				return 0, false
			}
			return max(ri.GetRetryDelay().AsDuration(), 0), true
		}
	}
	return 0, false
}
