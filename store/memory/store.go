package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/params"
	"github.com/ratekit/ratekit/internal/slot"
)

const (
	shardBits = 8
	numShards = 1 << shardBits
	// DefaultSweepInterval is how often the background sweep drops expired
	// keys unless WithSweepInterval says otherwise.
	DefaultSweepInterval = 10 * time.Second
)

// Store is the memory store. It implements core.ScriptRunner and
// core.LocalStore. The zero Store, and a nil *Store, run nothing: every
// call fails with an error wrapping core.ErrStore, and StoreName is "",
// so that limiters refuse it when they are built; build one with New and
// stop it with Close.
type Store struct {
	// shards come first: the Store is allocated page-aligned (it is
	// large), so that every shard starts a cache line.
	shards [numShards]shard
	clock  core.Clock
	// mono: clock is the default, read as the wall clock at New plus the
	// monotonic time since (start): half the cost of time.Now, and it
	// never steps back.
	mono       bool
	start      time.Time
	startUS    int64
	hash       hasher
	sweepEvery time.Duration

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// shard is one lock and the keys it guards. Its size is a multiple of
// a cache line, and the fields a decision touches come first, so that
// a decision reads two or three lines of it and shards share none.
type shard struct {
	shardFields
	_ [(64 - unsafe.Sizeof(shardFields{})%64) % 64]byte
}

type shardFields struct {
	// mu and what every call writes in tx share the shard's first line:
	// a decision on a known key writes that line of the shard and no
	// other (a new key also writes t and key).
	mu sync.Mutex
	tx tx    // reused under mu, so a call allocates no Tx
	t  table // see table.go
	// key holds the storage key of an in-process call (Lock) under mu.
	key []byte
}

// Option configures a Store.
type Option func(*Store) error

// WithClock makes the store read time from c: the clock scripts see in
// server-time mode, and the clock TTLs run on. Without it the store reads
// the system's wall clock once, at New, and from then on adds the
// monotonic time elapsed (as time.Since does): its time never steps back
// when the wall clock is set, and reading it costs half of time.Now.
// A call at a time c reads outside 1970 to 2112 (what ratekit computes
// with) fails, changing nothing, with an error wrapping
// core.ErrInvalidTime and core.ErrStore.
func WithClock(c core.Clock) Option {
	return func(s *Store) error {
		if c == nil {
			return fmt.Errorf("%w: memory.WithClock: clock is nil", core.ErrInvalidConfig)
		}
		if err := params.CheckClock(c); err != nil {
			return fmt.Errorf("memory.WithClock: %w", err)
		}
		s.clock, s.mono = c, false
		return nil
	}
}

// WithSweepInterval sets how often expired keys are swept; 0 turns the
// sweep off (expired keys then read as absent but stay in memory until
// they are written again or Sweep is called).
func WithSweepInterval(d time.Duration) Option {
	return func(s *Store) error {
		if d < 0 {
			return fmt.Errorf("%w: memory.WithSweepInterval: interval must not be negative, got %v", core.ErrInvalidConfig, d)
		}
		s.sweepEvery = d
		return nil
	}
}

// New returns a running Store. Call Close to stop its sweep.
func New(opts ...Option) (*Store, error) {
	s := &Store{
		clock:      core.ClockFunc(time.Now),
		mono:       true,
		hash:       newHasher(),
		sweepEvery: DefaultSweepInterval,
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: memory.New: an Option is nil", core.ErrInvalidConfig)
		}
		if err := o(s); err != nil {
			return nil, err
		}
	}
	s.start = time.Now()
	s.startUS = s.start.UnixMicro()
	for i := range s.shards {
		s.shards[i].tx.sh = &s.shards[i]
		s.shards[i].tx.hash = &s.hash
	}
	if s.sweepEvery > 0 {
		go s.sweepLoop(s.sweepEvery)
	} else {
		close(s.done)
	}
	return s, nil
}

// Close stops the background sweep and waits for it to end. The store stays
// usable afterwards; expired keys then stay in memory until they are
// written again or Sweep is called. Close is safe
// to call more than once.
func (s *Store) Close() error {
	if !s.usable() {
		return nil // nothing runs
	}
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

var _ core.StoreNamer = (*Store)(nil)

// StoreName returns "memory" (core.StoreNamer), for metrics and traces,
// and "" for a nil *Store or a Store not made by New, which limiters
// refuse when they are built.
func (s *Store) StoreName() string {
	if !s.usable() {
		return ""
	}
	return "memory"
}

// usable reports whether New made s.
func (s *Store) usable() bool { return s != nil && s.clock != nil }

// unusable is the error of every call on a nil or zero Store.
func (s *Store) unusable() error {
	what := "a zero Store, not made by New"
	if s == nil {
		what = "a nil *Store"
	}
	return fmt.Errorf("%w: %w: memory: the store is %s", core.ErrStore, core.ErrInvalidConfig, what)
}

// Len returns the number of keys held, live or expired but not yet dropped.
func (s *Store) Len() int {
	if !s.usable() {
		return 0
	}
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.t.n
		sh.mu.Unlock()
	}
	return n
}

// now returns the store's time in Unix µs, or an error wrapping
// core.ErrInvalidTime when its clock (WithClock) reads a time outside
// what ratekit computes with (params.Time): a script would store times
// it cannot read back.
func (s *Store) now() (int64, error) {
	if s.mono {
		if now := s.startUS + int64(time.Since(s.start)/time.Microsecond); uint64(now) < uint64(params.MaxTime) {
			return now, nil
		}
	}
	return s.clockNow()
}

// clockNow is now's slow path: the time from an injected clock, or a
// default clock past the range (a system clock set before 1970).
func (s *Store) clockNow() (int64, error) {
	t := s.clock.Now()
	if s.mono {
		t = s.start.Add(time.Since(s.start))
	}
	us, err := params.Time("memory: the store's clock", t)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", core.ErrStore, err)
	}
	return us, nil
}

// shardOf returns the shard of key and the hash that finds it there.
func (s *Store) shardOf(key string) (int, uint64) {
	h, sh := s.hash.key(key)
	return int(sh >> (64 - shardBits)), h
}

// RunScript runs sc's Go twin atomically: every shard holding one of keys is
// locked for the call. It fails, changing nothing, when s cannot run
// scripts (a nil or zero Store, not made by New), when ctx has ended, when sc has no twin, and when
// keys span Redis Cluster slots: a Redis store refuses such a script, and
// so does this one, so that what works here works on a cluster.
func (s *Store) RunScript(ctx context.Context, sc *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if !s.usable() {
		return nil, s.unusable()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: memory: %w", core.ErrStore, err)
	}
	twin := sc.Twin()
	if twin == nil {
		return nil, fmt.Errorf("%w: memory: script %q has no Go twin", core.ErrStore, sc.Name())
	}
	if err := slot.Check(keys); err != nil {
		return nil, fmt.Errorf("%w: memory: script %q: %w", core.ErrStore, sc.Name(), err)
	}
	if len(keys) == 0 {
		// A script without keys still runs, against an empty view.
		now, err := s.now()
		if err != nil {
			return nil, err
		}
		t := multiTx{s: s, nowUS: now}
		return s.runTwin(sc, twin, &t, keys, args, reply)
	}
	first, h := s.shardOf(keys[0])
	for _, k := range keys[1:] {
		if i, _ := s.shardOf(k); i != first {
			return s.runMulti(sc, twin, keys, args, reply)
		}
	}
	sh := &s.shards[first]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now, err := s.now()
	if err != nil {
		return nil, err
	}
	sh.tx.begin(now, keys[0], h)
	return s.runTwin(sc, twin, &sh.tx, keys, args, reply)
}

func (s *Store) runTwin(sc *core.Script, twin core.TwinFunc, t errTx, keys []string, args []int64, buf []int64) (reply []int64, err error) {
	defer func() {
		// A twin that panics is a bug in the twin; the caller gets an error,
		// and the store stays usable.
		if p := recover(); p != nil {
			reply, err = nil, panicError(sc.Name(), p)
		}
	}()
	reply, err = twin(t, keys, args, buf)
	if err == nil {
		err = t.takeErr()
	}
	if err != nil {
		return nil, scriptError(sc.Name(), err)
	}
	return reply, nil
}

// scriptError is the error of a script named name that failed with err.
func scriptError(name string, err error) error {
	return fmt.Errorf("%w: memory: script %q: %w", core.ErrStore, name, err)
}

// panicError is the error of a script named name whose twin panicked
// with p: a bug in the twin, which the store survives.
func panicError(name string, p any) error {
	return fmt.Errorf("%w: memory: script %q panicked: %v", core.ErrStore, name, p)
}

// runMulti runs a script whose keys span shards, locking them in index
// order.
func (s *Store) runMulti(sc *core.Script, twin core.TwinFunc, keys []string, args []int64, reply []int64) ([]int64, error) {
	idx := make([]int, len(keys))
	for i, k := range keys {
		idx[i], _ = s.shardOf(k)
	}
	slices.Sort(idx)
	for _, i := range slices.Compact(idx) {
		s.shards[i].mu.Lock()
		defer s.shards[i].mu.Unlock()
	}
	now, err := s.now()
	if err != nil {
		return nil, err
	}
	t := &multiTx{s: s, nowUS: now}
	return s.runTwin(sc, twin, t, keys, args, reply)
}

func (s *Store) sweepLoop(every time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			s.Sweep()
		}
	}
}

// Sweep drops every expired key now, one shard at a time, and returns how
// many it dropped. The background sweep calls it; tests may too.
func (s *Store) Sweep() int {
	if !s.usable() {
		return 0
	}
	dropped := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if now, err := s.now(); err == nil {
			dropped += sh.t.sweep(now)
		}
		sh.mu.Unlock()
	}
	return dropped
}
