package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/slot"
	"github.com/ratekit/ratekit/store/memory"
	"github.com/ratekit/ratekit/testkit/adaptertest"
)

// counter increments the integer at each key and replies with the new
// values; the key lives ARGV[1] µs.
var counter = core.NewScript("counter", "", func(tx core.Tx, keys []string, args []int64, out []int64) ([]int64, error) {
	for _, k := range keys {
		var n int64
		if v, ok := tx.Get(k); ok {
			n = v[0]
		}
		n++
		tx.Put(k, 1, time.Duration(args[0])*time.Microsecond)[0] = n
		out = append(out, n)
	}
	return out, nil
}, false)

func newStore(t *testing.T, opts ...memory.Option) *memory.Store {
	t.Helper()
	s, err := memory.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestTTLExpiresOnAccessAndSweep(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s := newStore(t, memory.WithClock(clock), memory.WithSweepInterval(0))
	ctx := context.Background()
	ttl := []int64{int64(time.Second / time.Microsecond)}
	for i := 0; i < 3; i++ {
		got, err := s.RunScript(ctx, counter, []string{"a"}, ttl, nil)
		if err != nil || got[0] != int64(i+1) {
			t.Fatalf("run %d: %v, %v", i, got, err)
		}
	}
	if _, err := s.RunScript(ctx, counter, []string{"b"}, ttl, nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second - time.Microsecond)
	if n := s.Sweep(); n != 0 || s.Len() != 2 {
		t.Fatalf("swept %d keys before their TTL, %d left", n, s.Len())
	}
	clock.Advance(time.Microsecond)
	// Touching "a" finds it expired: it starts again from 1 (reusing the
	// entry).
	if got, _ := s.RunScript(ctx, counter, []string{"a"}, ttl, nil); got[0] != 1 {
		t.Fatalf("expired key still counted: %v", got)
	}
	if n := s.Sweep(); n != 1 || s.Len() != 1 {
		t.Fatalf("sweep dropped %d, %d left; want 1 dropped (b), 1 left (a)", n, s.Len())
	}
}

func TestBackgroundSweepAndClose(t *testing.T) {
	clock := fakeclock.New(time.Unix(1000, 0))
	s, err := memory.New(memory.WithClock(clock), memory.WithSweepInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunScript(context.Background(), counter, []string{"{t}a", "{t}b", "{t}c"}, []int64{10}, nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for s.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("background sweep left %d expired keys", s.Len())
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() { s.Close(); s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	// Still usable after Close.
	if got, err := s.RunScript(context.Background(), counter, []string{"{t}a"}, []int64{10}, nil); err != nil || got[0] != 1 {
		t.Fatalf("after Close: %v, %v", got, err)
	}
}

// Keys with different hash tags in one cluster slot: a script may touch
// them together (Redis would run it), and they most likely live in
// different shards.
func TestKeysAcrossShardsAreAtomic(t *testing.T) {
	s := newStore(t)
	var keys []string
	for i := 0; len(keys) < 8; i++ {
		k := "{t" + strconv.Itoa(i) + "}"
		if slot.Of(k) == slot.Of("{t0}") {
			keys = append(keys, k)
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				got, err := s.RunScript(context.Background(), counter, keys, []int64{int64(time.Hour / time.Microsecond)}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				for _, v := range got[1:] {
					if v != got[0] {
						t.Errorf("a script saw its keys at different counts: %v", got)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestErrors(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	noTwin := core.NewScript("lua-only", "return {1}", nil, false)
	if _, err := s.RunScript(ctx, noTwin, []string{"k"}, nil, nil); !errors.Is(err, core.ErrStore) || !strings.Contains(err.Error(), "lua-only") {
		t.Errorf("script without twin: %v", err)
	}
	panics := core.NewScript("panics", "", func(core.Tx, []string, []int64, []int64) ([]int64, error) { panic("boom") }, false)
	if _, err := s.RunScript(ctx, panics, []string{"k"}, nil, nil); !errors.Is(err, core.ErrStore) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panicking twin: %v", err)
	}
	fails := core.NewScript("fails", "", func(core.Tx, []string, []int64, []int64) ([]int64, error) { return nil, errors.New("nope") }, false)
	if _, err := s.RunScript(ctx, fails, []string{"k"}, nil, nil); !errors.Is(err, core.ErrStore) {
		t.Errorf("failing twin: %v", err)
	}
	badTTL := core.NewScript("bad-ttl", "", func(tx core.Tx, k []string, _ []int64, _ []int64) ([]int64, error) {
		tx.Put(k[0], 1, 0)
		return []int64{1}, nil
	}, false)
	if _, err := s.RunScript(ctx, badTTL, []string{"k"}, nil, nil); !errors.Is(err, core.ErrStore) || s.Len() != 0 {
		t.Errorf("Put without TTL: %v, %d keys", err, s.Len())
	}
	lengths := []int{-1}
	if strconv.IntSize == 64 {
		tooLong := int64(math.MaxInt32) + 1
		lengths = append(lengths, int(tooLong))
	}
	for _, n := range lengths {
		// One shard's Tx, and (keys of one slot in several shards, almost
		// surely) many shards'.
		for _, keys := range [][]string{{"k"}, {"{k}a", "{k}b", "{k}c", "{k}d"}} {
			ran := false
			badLen := core.NewScript("bad-len", "", func(tx core.Tx, k []string, _ []int64, _ []int64) ([]int64, error) {
				ran = true
				if v := tx.Put(k[0], n, time.Second); v != nil {
					return nil, fmt.Errorf("Put(%d) returned %d integers", n, len(v))
				}
				return []int64{1}, nil
			}, false)
			_, err := s.RunScript(ctx, badLen, keys, nil, nil)
			if !ran || !errors.Is(err, core.ErrStore) || err == nil || !strings.Contains(err.Error(), "negative length") || s.Len() != 0 {
				t.Errorf("Put of %d integers on %d keys: ran %v, %v, %d keys", n, len(keys), ran, err, s.Len())
			}
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.RunScript(cctx, counter, []string{"k"}, []int64{1}, nil); !errors.Is(err, core.ErrStore) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	// The store still works: the lock was released each time.
	if _, err := s.RunScript(ctx, counter, []string{"k"}, []int64{1000}, nil); err != nil {
		t.Errorf("after errors: %v", err)
	}
	if _, err := memory.New(memory.WithClock(nil)); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("WithClock(nil): %v", err)
	}
	var nilClock *fakeclock.Clock
	if _, err := memory.New(memory.WithClock(nilClock)); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("WithClock(a nil *fakeclock.Clock): %v", err)
	}
	if _, err := memory.New(nil); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("New(nil): %v", err)
	}
	if _, err := memory.New(memory.WithSweepInterval(-1)); !errors.Is(err, core.ErrInvalidConfig) {
		t.Errorf("WithSweepInterval(-1): %v", err)
	}
}

// The promises every store keeps: an ended context changes nothing, keys
// in different cluster slots are refused, as on Redis, and keys are the
// caller's only during a call (the store copies the keys it keeps).
func TestStore(t *testing.T) {
	adaptertest.RunStore(t, newStore(t))
}

func TestKeysInDifferentSlotsAreRefused(t *testing.T) {
	s := newStore(t)
	_, err := s.RunScript(context.Background(), counter, []string{"{a}", "{b}"}, []int64{1000}, nil)
	if !errors.Is(err, core.ErrStore) || !errors.Is(err, slot.ErrCrossSlot) {
		t.Fatalf("keys in two slots: %v; want ErrStore and slot.ErrCrossSlot", err)
	}
	if s.Len() != 0 {
		t.Fatalf("the refused script wrote %d keys", s.Len())
	}
}

// recorder is a store wrapper that keeps the keys it is given, copied
// (keys are the caller's only during the call): a metrics or audit layer,
// say. It holds the store in a named field, so that it sees every call a
// limiter makes; embedded, the store's Lock would be its own and limiters
// would decide in process, around its RunScript.
type recorder struct {
	s    *memory.Store
	keys []string
}

func (r *recorder) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	for _, k := range keys {
		r.keys = append(r.keys, strings.Clone(k))
	}
	return r.s.RunScript(ctx, s, keys, args, reply)
}

// A nil or zero store is refused when a limiter is built, and its calls
// fail without a panic.
func TestUnusable(t *testing.T) {
	adaptertest.Unusable(t, (*memory.Store)(nil), "nil *Store")
	adaptertest.Unusable(t, &memory.Store{}, "not made by New")
	var zero memory.Store
	if zero.Len() != 0 || zero.Sweep() != 0 || zero.Close() != nil {
		t.Fatal("Len, Sweep or Close of a zero Store")
	}
	var nilStore *memory.Store
	if nilStore.Len() != 0 || nilStore.Sweep() != 0 || nilStore.Close() != nil {
		t.Fatal("Len, Sweep or Close of a nil *Store")
	}
}

// A store clock outside the times ratekit computes with is refused by New
// (memory.WithClock reads it once) and, should it move there later, at
// every call, before anything is written: a script would store times it
// could not read back, and report its own state as corrupt.
func TestClockOutOfRange(t *testing.T) {
	ctx := context.Background()
	for _, at := range []time.Time{time.Unix(-100, 0), {}, time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if _, err := memory.New(memory.WithClock(fakeclock.New(at))); !errors.Is(err, core.ErrInvalidConfig) || !errors.Is(err, core.ErrInvalidTime) {
			t.Errorf("WithClock of a clock at %v: %v, want ErrInvalidConfig and ErrInvalidTime", at, err)
		}
		c := fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s, err := memory.New(memory.WithClock(c), memory.WithSweepInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c.Set(at)
		// No Clock: the limiter decides at the store's time, in process.
		l, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := l.Allow(ctx, "k"); !errors.Is(err, core.ErrInvalidTime) || !errors.Is(err, core.ErrStore) {
				t.Errorf("clock at %v: Allow: %v, want ErrInvalidTime and ErrStore", at, err)
			}
		}
		// Through a script (AllowMany's batch), and for a script of no key.
		for _, r := range l.AllowMany(ctx, []core.Request{{Key: "k", N: 1}, {Key: "j", N: 1}}) {
			if !errors.Is(r.Err, core.ErrInvalidTime) {
				t.Errorf("clock at %v: AllowMany: %v, want ErrInvalidTime", at, r.Err)
			}
		}
		if _, err := s.RunScript(ctx, counter, nil, []int64{1}, nil); !errors.Is(err, core.ErrInvalidTime) {
			t.Errorf("clock at %v: a script of no key: %v", at, err)
		}
		if s.Len() != 0 {
			t.Errorf("clock at %v: %d keys written", at, s.Len())
		}
		// A clock back in range: the key is fresh, as nothing was written.
		c.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		for i := range 3 {
			d, err := l.Allow(ctx, "k")
			if err != nil || d.Allowed != (i < 2) {
				t.Errorf("clock back in range, call %d: %+v, %v", i, d, err)
			}
		}
	}
}
