package grpclimit

import (
	"context"
	"time"

	"google.golang.org/grpc"
)

// SetNow makes in pace its log lines by now.
func SetNow(in *Interceptors, now func() time.Time) { in.now = now }

// UnaryClientInterceptorWithSleep is UnaryClientInterceptor waiting with
// sleep instead of a timer.
func UnaryClientInterceptorWithSleep(cfg RetryConfig, sleep func(ctx context.Context, d time.Duration) error) (grpc.UnaryClientInterceptor, error) {
	r, err := newRetrier(cfg)
	if err != nil {
		return nil, err
	}
	r.sleep = sleep
	return r.intercept, nil
}
