package goredisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// watch is a go-redis hook that sees what the Runner sends: the
// pipelines, and the script commands sent alone, which it can hold.
type watch struct {
	mu        sync.Mutex
	pipelines int           // of more than one script command
	biggest   int           // commands in the largest
	mixed     int           // pipelines holding a key containing "bad" beside others
	hold      chan struct{} // when set, a lone command on a "hold" key waits for it to close
	held      chan struct{} // one value per command held
	evals     atomic.Int64  // EVAL commands, alone or in pipelines
	evalshas  atomic.Int64  // EVALSHA commands, alone or in pipelines
	lone      atomic.Int64  // script commands sent alone
}

// scriptKey returns the first key of a script command, "" for another
// command. The Runner passes keys as *string.
func scriptKey(cmd redis.Cmder) string {
	args := cmd.Args()
	if len(args) < 4 || !strings.HasPrefix(cmd.Name(), "eval") && !strings.HasPrefix(cmd.Name(), "fcall") {
		return ""
	}
	switch k := args[3].(type) {
	case *string:
		return *k
	case string:
		return k
	}
	return ""
}

func (w *watch) DialHook(next redis.DialHook) redis.DialHook { return next }

func (w *watch) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		key := scriptKey(cmd)
		if key != "" {
			w.lone.Add(1)
			w.count(cmd)
		}
		if w.hold != nil && strings.Contains(key, "hold") {
			select {
			case w.held <- struct{}{}:
			default: // the call again, as EVALSHA or EVAL, once released
			}
			<-w.hold
		}
		return next(ctx, cmd)
	}
}

func (w *watch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n, bad := 0, false
		for _, cmd := range cmds {
			if key := scriptKey(cmd); key != "" {
				n++
				bad = bad || strings.Contains(key, "bad")
				w.count(cmd)
			}
		}
		w.mu.Lock()
		if n > 1 {
			w.pipelines++
			w.biggest = max(w.biggest, n)
			if bad {
				w.mixed++
			}
		}
		w.mu.Unlock()
		return next(ctx, cmds)
	}
}

// count counts cmd, a script command, if it is an EVAL or an EVALSHA.
func (w *watch) count(cmd redis.Cmder) {
	switch cmd.Name() {
	case "eval":
		w.evals.Add(1)
	case "evalsha":
		w.evalshas.Add(1)
	}
}

func (w *watch) counts() (pipelines, biggest, mixed int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pipelines, w.biggest, w.mixed
}

// pipelineExact runs 64 goroutines deciding on 8 keys through rdb, on a
// frozen clock: each key allows exactly its capacity, however the calls
// were pipelined, and some were.
func pipelineExact(t *testing.T, rdb redis.UniversalClient) {
	w := &watch{}
	rdb.AddHook(w)
	const capacity, perKey, keys, goroutines = 300, 480, 8, 64
	prefix := fmt.Sprintf("pipe:%d:", time.Now().UnixNano())
	lim, err := tokenbucket.New(newStore(t, rdb), tokenbucket.Config{
		Capacity: capacity, RefillRate: 1, RefillInterval: time.Hour, Prefix: prefix, Clock: fakeclock.New(time.Now()),
	})
	if err != nil {
		t.Fatal(err)
	}
	var allowed [keys]atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perKey * keys / goroutines {
				k := (g + i) % keys
				d, err := lim.Allow(context.Background(), fmt.Sprint("user", k))
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for k := range allowed {
		if got := allowed[k].Load(); got != capacity {
			t.Errorf("user%d: %d allowed of %d calls, want exactly %d", k, got, perKey, capacity)
		}
	}
	p, biggest, _ := w.counts()
	t.Logf("%d pipelines of more than one call, the largest %d; %d calls alone", p, biggest, w.lone.Load())
	if p == 0 {
		t.Error("64 goroutines and not one pipeline")
	}
}

func TestPipeliningExact(t *testing.T) {
	srv := redistest.Start(t)
	t.Run("Client", func(t *testing.T) {
		pipelineExact(t, redisClient(t, srv.Addr))
	})
	t.Run("Ring", func(t *testing.T) {
		other := redistest.Start(t)
		ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr, "b": other.Addr}, MaxRetries: -1})
		t.Cleanup(func() { ring.Close() })
		pipelineExact(t, ring)
	})
}

// redisClient returns a client with a pool for 64 goroutines.
func redisClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	return c
}

// A corrupt key among good ones: the calls on it fail
// (core.ErrCorruptState, which the script reports), the others in the
// same pipelines are decided.
func TestPipeliningPerCallErrors(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redisClient(t, srv.Addr)
	w := &watch{}
	rdb.AddHook(w)
	ctx := context.Background()
	const prefix = "pipe:err:"
	if err := rdb.Set(ctx, prefix+"{bad}", "not a bucket", 0).Err(); err != nil {
		t.Fatal(err)
	}
	lim, err := tokenbucket.New(newStore(t, rdb), tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; ; round++ {
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					key := fmt.Sprint("good", g)
					if (g+i)%8 == 0 {
						key = "bad"
					}
					d, err := lim.Allow(ctx, key)
					switch {
					case key == "bad":
						if !errors.Is(err, core.ErrCorruptState) {
							t.Errorf("the corrupt key: %+v, %v; want core.ErrCorruptState", d, err)
						}
					case err != nil || !d.Allowed:
						t.Errorf("%s: %+v, %v", key, d, err)
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if _, _, mixed := w.counts(); mixed > 0 {
			t.Logf("%d pipelines held the corrupt key beside good ones, in %d rounds", mixed, round+1)
			return
		}
		if round == 50 {
			t.Fatal("the corrupt key never shared a pipeline in 50 rounds")
		}
	}
}

// inFlight is how many calls go alone before the rest are queued: "up to
// four", scriptproto.Pipelining's doc says.
const inFlight = 4

// holdAll fills every place in flight with a call held in the hook, and
// returns a function that lets them go and waits for them.
func holdAll(t *testing.T, lim *ratekit.Limiter, w *watch) (release func()) {
	t.Helper()
	w.hold, w.held = make(chan struct{}), make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	for i := range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim.Allow(context.Background(), fmt.Sprint("hold", i)) // its outcome is the test's
		}()
		select {
		case <-w.held:
		case <-time.After(10 * time.Second):
			t.Fatal("a held call never reached the client")
		}
	}
	var once sync.Once
	return func() { once.Do(func() { close(w.hold); wg.Wait() }) }
}

// A caller whose ctx ends while its call is queued returns at once, and
// nothing is sent for it; the calls queued beside it are decided.
func TestPipeliningCallerLeavingWhileQueued(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redisClient(t, srv.Addr)
	w := &watch{}
	rdb.AddHook(w)
	const prefix = "pipe:leave:"
	lim, err := tokenbucket.New(newStore(t, rdb), tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	release := holdAll(t, lim, w)
	defer release()
	stayed := make(chan error, 1)
	go func() { _, err := lim.Allow(context.Background(), "stays"); stayed <- err }()
	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() { _, err := lim.Allow(ctx, "leaves"); left <- err }()
	time.Sleep(50 * time.Millisecond) // to queue; a call not yet queued when ctx ends sends nothing either
	cancel()
	select {
	case err := <-left:
		if !errors.Is(err, core.ErrStore) || !errors.Is(err, context.Canceled) {
			t.Errorf("the caller that left: %v, want core.ErrStore and context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a queued caller whose ctx ended is still waiting")
	}
	release()
	if err := <-stayed; err != nil {
		t.Errorf("the call queued beside it: %v", err)
	}
	if n, err := redistest.Command(srv.Addr, "EXISTS", prefix+"{leaves}"); err != nil || n != "0" {
		t.Errorf("EXISTS the leaver's key: %s, %v; want 0: a call that left while queued was sent", n, err)
	}
}

// Close while calls are queued: every call returns an error, none hangs.
func TestPipeliningClose(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, PoolSize: 64})
	w := &watch{}
	rdb.AddHook(w)
	lim, err := tokenbucket.New(newStore(t, rdb), tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: time.Second, Prefix: "pipe:close:"})
	if err != nil {
		t.Fatal(err)
	}
	release := holdAll(t, lim, w)
	errs := make(chan error, 16)
	for i := range cap(errs) {
		go func() { _, err := lim.Allow(context.Background(), fmt.Sprint("queued", i)); errs <- err }()
	}
	time.Sleep(50 * time.Millisecond) // to queue
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
	release()
	for range cap(errs) {
		select {
		case err := <-errs:
			if !errors.Is(err, core.ErrStore) {
				t.Errorf("a call queued when the client closed: %v, want core.ErrStore", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call queued when the client closed never returned")
		}
	}
	if _, err := lim.Allow(context.Background(), "after"); !errors.Is(err, core.ErrStore) || !errors.Is(err, redis.ErrClosed) {
		t.Errorf("a call after Close: %v, want core.ErrStore and redis.ErrClosed", err)
	}
}

// SCRIPT FLUSH or FUNCTION FLUSH while 64 goroutines pipeline: each
// command that meets NOSCRIPT is sent again as EVAL, each that meets a
// missing function as EVALSHA (and its library is loaded again), no
// caller sees an error, and every key has counted each allowed call
// once: nothing lost, nothing counted twice.
func TestPipeliningScriptFlush(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flush [][]string
		opts  []scriptproto.Option
		// retried returns how many calls went again after a flush.
		retried func(w *watch) int64
	}{
		{"SCRIPT FLUSH, EVALSHA", [][]string{{"SCRIPT", "FLUSH"}}, []scriptproto.Option{scriptproto.WithoutFunctions()}, func(w *watch) int64 { return w.evals.Load() }},
		{"FUNCTION FLUSH, functions", [][]string{{"FUNCTION", "FLUSH"}}, nil, func(w *watch) int64 { return w.evalshas.Load() }},
		{"both, functions", [][]string{{"FUNCTION", "FLUSH"}, {"SCRIPT", "FLUSH"}}, nil, func(w *watch) int64 { return w.evals.Load() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !redistest.ServerVersion(t).AtLeast(7, 0) && tt.opts == nil {
				t.Skip("the server has no functions (Redis before 7.0): the store runs EVALSHA, which the first case tests")
			}
			srv := redistest.Start(t)
			rdb := redisClient(t, srv.Addr)
			w := &watch{}
			rdb.AddHook(w)
			const capacity = 1 << 30 // on a frozen clock: nothing refills
			lim, err := tokenbucket.New(newStore(t, rdb, tt.opts...), tokenbucket.Config{
				Capacity: capacity, RefillRate: 1 << 12, RefillInterval: time.Hour, Prefix: "pipe:flush:", Clock: fakeclock.New(time.Now()),
			})
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var calls, errs atomic.Int64
			var allowed [64 * 4]atomic.Int64
			for g := range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						k := g*4 + i%4
						d, err := lim.Allow(context.Background(), fmt.Sprint("u", k))
						if err != nil {
							errs.Add(1)
							t.Error(err)
							return
						}
						if d.Allowed {
							allowed[k].Add(1)
						}
						calls.Add(1)
					}
				}()
			}
			flushes := 0
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline) || tt.retried(w) == 0; flushes++ {
				for _, cmd := range tt.flush {
					if _, err := redistest.Command(srv.Addr, cmd...); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Millisecond)
				if flushes > 100000 {
					break
				}
			}
			close(stop)
			wg.Wait()
			p, biggest, _ := w.counts()
			t.Logf("%d flushes, %d calls, %d EVALSHAs, %d EVALs; %d pipelines, the largest %d", flushes, calls.Load(), w.evalshas.Load(), w.evals.Load(), p, biggest)
			if errs.Load() != 0 || p == 0 || tt.retried(w) == 0 {
				t.Errorf("%d errors, %d pipelines, %d calls again; want none, some, some", errs.Load(), p, tt.retried(w))
			}
			for k := range allowed {
				d, err := lim.Peek(context.Background(), fmt.Sprint("u", k))
				if err != nil {
					t.Fatal(err)
				}
				if used := capacity - d.Remaining; used != allowed[k].Load() {
					t.Errorf("key u%d counted %d, its callers were allowed %d", k, used, allowed[k].Load())
				}
			}
		})
	}
}

// scriptproto.Pipelining(false) sends every call alone.
func TestWithoutPipelining(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redisClient(t, srv.Addr)
	w := &watch{}
	rdb.AddHook(w)
	lim, err := tokenbucket.New(newStore(t, rdb, scriptproto.Pipelining(false)), tokenbucket.Config{Capacity: 1 << 40, RefillRate: 1 << 40, RefillInterval: time.Second, Prefix: "pipe:off:"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if _, err := lim.Allow(context.Background(), fmt.Sprint("u", g)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p, _, _ := w.counts(); p != 0 {
		t.Errorf("%d pipelines; want every call alone", p)
	}
}
