package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/grpclimit"
)

// TestClientRetry: the client interceptor waits exactly the RetryInfo a
// denial carries and calls again; it returns at once a denial whose wait
// is longer than MaxWait or than the call's deadline, and any other
// error.
func TestClientRetry(t *testing.T) {
	for _, tt := range []struct {
		name     string
		cfg      grpclimit.RetryConfig
		deadline time.Duration
		value    string
		want     codes.Code
		waits    string
	}{
		{"waits and retries", grpclimit.RetryConfig{MaxWait: time.Minute}, 0, "", codes.OK, "[1m0s]"},
		{"longer than MaxWait", grpclimit.RetryConfig{MaxWait: 59 * time.Second}, 0, "", codes.ResourceExhausted, "[]"},
		{"longer than the default MaxWait", grpclimit.RetryConfig{}, 0, "", codes.ResourceExhausted, "[]"},
		{"one attempt", grpclimit.RetryConfig{MaxAttempts: 1, MaxWait: time.Hour}, 0, "", codes.ResourceExhausted, "[]"},
		{"past the deadline", grpclimit.RetryConfig{MaxWait: time.Hour}, 30 * time.Second, "", codes.ResourceExhausted, "[]"},
		{"not a denial", grpclimit.RetryConfig{MaxWait: time.Hour}, 0, "unauthenticated", codes.Unauthenticated, "[]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lim, clock := bucket(t, 1)
			in := newInterceptors(t, grpclimit.Config{Limiter: lim})
			var mu sync.Mutex
			var waits []time.Duration
			retry, err := grpclimit.UnaryClientInterceptorWithSleep(tt.cfg, func(_ context.Context, d time.Duration) error {
				mu.Lock()
				waits = append(waits, d)
				mu.Unlock()
				clock.Advance(d) // the server's time passes as the client waits
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			conn := serve(t, in, &svc{}, grpc.WithUnaryInterceptor(retry))
			ctx := context.Background()
			if tt.value == "" { // use up the limit
				if _, err := do(conn, ctx, ""); err != nil {
					t.Fatal(err)
				}
			}
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			if _, err := do(conn, ctx, tt.value); status.Code(err) != tt.want {
				t.Fatalf("second call: %v, want %v", err, tt.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := fmt.Sprint(waits); got != tt.waits {
				t.Fatalf("waits %s, want %s", got, tt.waits)
			}
		})
	}
}

// TestClientRetryGivesUp: after MaxAttempts calls the last denial is
// returned.
func TestClientRetryGivesUp(t *testing.T) {
	lim, _ := bucket(t, 1)
	in := newInterceptors(t, grpclimit.Config{Limiter: lim})
	waits := 0
	retry, _ := grpclimit.UnaryClientInterceptorWithSleep(grpclimit.RetryConfig{MaxAttempts: 4, MaxWait: time.Hour}, func(context.Context, time.Duration) error {
		waits++ // the server's clock stands still: every call is denied
		return nil
	})
	conn := serve(t, in, &svc{}, grpc.WithUnaryInterceptor(retry))
	do(conn, context.Background(), "")
	if _, err := do(conn, context.Background(), ""); status.Code(err) != codes.ResourceExhausted || waits != 3 {
		t.Fatalf("%v after %d waits, want ResourceExhausted after 3", err, waits)
	}
}

func TestRetryDelay(t *testing.T) {
	if _, ok := grpclimit.RetryDelay(status.Error(codes.ResourceExhausted, "no details")); ok {
		t.Error("a denial without RetryInfo has a delay")
	}
	if _, ok := grpclimit.RetryDelay(errors.New("plain")); ok {
		t.Error("a plain error has a delay")
	}
	if _, err := grpclimit.UnaryClientInterceptor(grpclimit.RetryConfig{MaxAttempts: -1}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("negative MaxAttempts: %v", err)
	}
	if _, err := grpclimit.UnaryClientInterceptor(grpclimit.RetryConfig{MaxWait: -1}); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("negative MaxWait: %v", err)
	}
}
