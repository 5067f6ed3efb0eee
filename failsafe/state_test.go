package failsafe_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
)

// records is a slog.Handler that keeps every record it is given.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// lines returns "LEVEL message" for each record at level or above.
func (r *records) lines(level slog.Level) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if rec.Level >= level {
			out = append(out, rec.Level.String()+" "+rec.Message)
		}
	}
	return out
}

// attr returns the value of the attribute key of the last record at level.
func (r *records) attr(level slog.Level, key string) slog.Value {
	r.mu.Lock()
	defer r.mu.Unlock()
	var v slog.Value
	for _, rec := range r.recs {
		if rec.Level == level {
			rec.Attrs(func(a slog.Attr) bool {
				if a.Key == key {
					v = a.Value
				}
				return true
			})
		}
	}
	return v
}

// TestState: Up, then Down after a failure, Probing while a probe of the
// down store runs, Down again when the probe fails, and Up once a probe
// gets an answer.
func TestState(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Unix(1000, 0).UnixNano())
	store := &gated{Limiter: bucket(t, 5)}
	l, err := failsafe.New(failsafe.Config{
		Limiter: store, Mode: failsafe.FailOpen, RetryInterval: time.Second,
		Clock:  core.ClockFunc(func() time.Time { return time.Unix(0, now.Load()) }),
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := func(step string, s failsafe.State) {
		t.Helper()
		if got := l.State(); got != s {
			t.Fatalf("%s: State() = %v, want %v", step, got, s)
		}
		if got := l.Down(); got != (s != failsafe.Up) {
			t.Fatalf("%s: Down() = %v in state %v", step, got, s)
		}
	}
	want("new", failsafe.Up)
	l.Allow(ctx, "k")
	want("after an answer", failsafe.Up)
	store.down.Store(true)
	l.Allow(ctx, "k")
	want("after a failure", failsafe.Down)

	// A probe that fails: Probing while it runs, then Down.
	probe := func(step string) {
		t.Helper()
		store.entered, store.release = make(chan struct{}), make(chan struct{})
		now.Add(int64(time.Second))
		done := make(chan struct{})
		go func() {
			defer close(done)
			l.Allow(ctx, "k")
		}()
		<-store.entered
		want(step+", during the probe", failsafe.Probing)
		close(store.release)
		<-done
		store.entered = nil
	}
	probe("failing probe")
	want("after the failed probe", failsafe.Down)
	store.down.Store(false)
	probe("answered probe")
	want("after the answered probe", failsafe.Up)
}

func TestStateString(t *testing.T) {
	for s, want := range map[failsafe.State]string{failsafe.Up: "up", failsafe.Down: "down", failsafe.Probing: "probing", 9: "State(9)"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

// TestLogger: an outage logs one line at Error when the store fails and
// one at Info when it answers again, however many calls fail in between;
// the failures in between are at Debug. OnError still gets every error.
func TestLogger(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	store := &flaky{Limiter: bucket(t, 100)}
	log := &records{}
	var errs atomic.Int64
	l, err := failsafe.New(failsafe.Config{
		Limiter: store, Mode: failsafe.FailClosed, RetryInterval: time.Second,
		Clock:   core.ClockFunc(func() time.Time { return now }),
		Logger:  slog.New(log),
		OnError: func(string, error) { errs.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	l.Allow(ctx, "k")
	if got := log.lines(slog.LevelDebug); len(got) != 0 {
		t.Fatalf("while up: %q, want nothing", got)
	}
	store.down.Store(true)
	for probe := 0; probe < 5; probe++ {
		for i := 0; i < 10; i++ {
			l.Allow(ctx, "k")
		}
		now = now.Add(time.Second)
	}
	store.down.Store(false)
	l.Allow(ctx, "k") // this probe gets an answer
	l.Allow(ctx, "k")

	wantLines := []string{
		"ERROR failsafe: the store failed, the mode decides until it answers again",
		"INFO failsafe: the store answers again, decisions come from it",
	}
	if got := log.lines(slog.LevelInfo); fmt.Sprint(got) != fmt.Sprint(wantLines) {
		t.Fatalf("lines at Info and above:\n%q\nwant\n%q", got, wantLines)
	}
	if got := log.lines(slog.LevelDebug); len(got) != 2+4 {
		t.Fatalf("%d lines in all, want 2 and one for each of the 4 failed probes: %q", len(got), got)
	}
	if got := errs.Load(); got != 5 {
		t.Fatalf("OnError called %d times, want 5 (each store call that failed)", got)
	}
	if got := log.attr(slog.LevelInfo, "down_for").Duration(); got != 5*time.Second {
		t.Fatalf("down_for = %v, want 5s", got)
	}
	if got := log.attr(slog.LevelError, "mode").String(); got != "fail closed" {
		t.Fatalf("mode = %q, want %q", got, "fail closed")
	}
}

// TestUnwrap: a failsafe Limiter gives the limiter it wraps to tools that
// walk a chain of wrappers.
func TestUnwrap(t *testing.T) {
	store := bucket(t, 1)
	l, err := failsafe.New(failsafe.Config{Limiter: store})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Unwrap(); got != store {
		t.Fatalf("Unwrap() = %v, want the Store", got)
	}
	var _ interface{ Unwrap() core.Limiter } = l
}

// panicking fails while its store is down, and panics once boom is set.
type panicking struct {
	core.Limiter
	boom atomic.Bool
}

func (p *panicking) Decide(ctx context.Context, r core.Request) (core.Decision, error) {
	if r.Op != core.OpAllow {
		return p.Limiter.Decide(ctx, r)
	}
	if p.boom.Load() {
		panic("boom")
	}
	return core.Decision{}, fmt.Errorf("%w: connection refused", core.ErrStore)
}

// TestProbePanics: a probe whose store call panics panics in its caller,
// and no longer counts as probing.
func TestProbePanics(t *testing.T) {
	now := time.Unix(1000, 0)
	store := &panicking{Limiter: bucket(t, 1)}
	l, err := failsafe.New(failsafe.Config{Limiter: store, RetryInterval: time.Second, Clock: core.ClockFunc(func() time.Time { return now }), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l.Allow(context.Background(), "k")
	now = now.Add(time.Second)
	store.boom.Store(true)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the probe's panic did not reach its caller")
			}
		}()
		l.Allow(context.Background(), "k")
	}()
	if got := l.State(); got != failsafe.Down {
		t.Fatalf("State() = %v after the probe panicked, want down", got)
	}
}
