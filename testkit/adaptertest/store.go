package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/slot"
)

// Scripts that every store runs: Lua for Redis, a Go twin for the memory
// store.
var (
	// incr adds ARGV[1] to the integer at each key (kept a minute) and
	// replies with the new values.
	incr = core.NewScript("adaptertest-incr", `local out = {}
for i, k in ipairs(KEYS) do
	out[i] = redis.call('INCRBY', k, ARGV[1])
	redis.call('PEXPIRE', k, 60000)
end
return out`, func(tx core.Tx, keys []string, args []int64, reply []int64) ([]int64, error) {
		for _, k := range keys {
			var n int64
			if v, ok := tx.Get(k); ok {
				n = v[0]
			}
			n += args[0]
			tx.Put(k, 1, time.Minute)[0] = n
			reply = append(reply, n)
		}
		return reply, nil
	}, false)
	// get replies with the integer at KEYS[1], 0 when there is none.
	get = core.NewScript("adaptertest-get", `return {tonumber(redis.call('GET', KEYS[1]) or '0')}`,
		func(tx core.Tx, keys []string, _ []int64, reply []int64) ([]int64, error) {
			v, _ := tx.Get(keys[0])
			if len(v) == 0 {
				return append(reply, 0), nil
			}
			return append(reply, v[0]), nil
		}, true)
)

// RunStore runs, as subtests of t, the checks every store must pass, the
// memory store included. runner must be empty of the keys "adaptertest:*"
// or hold only what these checks wrote. A store with a Len method (the
// memory store) is also checked to hold no more keys after a call that
// must change nothing.
// The store must also be a core.StoreNamer whose name is its package's
// directory under store/.
func RunStore(t *testing.T, runner core.ScriptRunner) {
	var size func(t *testing.T) string
	if l, ok := runner.(interface{ Len() int }); ok {
		size = func(*testing.T) string { return fmt.Sprint(l.Len()) }
	}
	runStore(t, runner, size, "")
}

// runStore is RunStore; size, when not nil, returns the number of keys the
// store holds (DBSIZE), and name is the store's name, "" for the
// directory of its type's package.
func runStore(t *testing.T, runner core.ScriptRunner, size func(t *testing.T) string, name string) {
	ctx := context.Background()
	read := func(t *testing.T, key string) int64 {
		t.Helper()
		v, err := runner.RunScript(ctx, get, []string{key}, nil, nil)
		if err != nil || len(v) != 1 {
			t.Fatalf("reading %s: %v, %v", key, v, err)
		}
		return v[0]
	}
	br, batches := runner.(core.BatchRunner)

	t.Run("NamedAfterItsDirectory", func(t *testing.T) {
		// Metrics and traces label a store by its name: the directory
		// its package lives in under store/.
		n, ok := runner.(core.StoreNamer)
		if !ok {
			t.Fatalf("%T is not a core.StoreNamer", runner)
		}
		want := name
		if want == "" {
			want = path.Base(reflect.TypeOf(runner).Elem().PkgPath())
		}
		if got := n.StoreName(); got != want {
			t.Fatalf("%T.StoreName() = %q, want %q", runner, got, want)
		}
	})

	t.Run("KeysInDifferentSlotsAreRefused", func(t *testing.T) {
		same := []string{"adaptertest:{slot}:1", "adaptertest:{slot}:2"}
		if got, err := runner.RunScript(ctx, incr, same, []int64{1}, nil); err != nil || len(got) != 2 {
			t.Fatalf("keys in one slot: %v, %v", got, err)
		}
		two := []string{"adaptertest:{slot-a}", "adaptertest:{slot-b}"}
		if slot.Same(two) {
			t.Fatal("the test's keys share a slot")
		}
		_, err := runner.RunScript(ctx, incr, two, []int64{1}, nil)
		if !errors.Is(err, core.ErrStore) || !errors.Is(err, slot.ErrCrossSlot) || !strings.Contains(err.Error(), "adaptertest-incr") {
			t.Fatalf("keys in two slots: %v; want ErrStore and slot.ErrCrossSlot, naming the script", err)
		}
		if !batches {
			return
		}
		res := br.RunScripts(ctx, []core.ScriptCall{
			{Script: incr, Keys: same[:1], Args: []int64{10}},
			{Script: incr, Keys: two, Args: []int64{1}},
			{Script: incr, Keys: same[1:], Args: []int64{10}},
		})
		if len(res) != 3 {
			t.Fatalf("%d results for 3 calls", len(res))
		}
		if !errors.Is(res[1].Err, core.ErrStore) || !errors.Is(res[1].Err, slot.ErrCrossSlot) {
			t.Fatalf("batch, keys in two slots: %v", res[1].Err)
		}
		if res[0].Err != nil || res[2].Err != nil || fmt.Sprint(res[0].Reply, res[2].Reply) != "[11] [11]" {
			t.Fatalf("batch, the calls around the refused one: %+v %+v", res[0], res[2])
		}
		for _, k := range two {
			if n := read(t, k); n != 0 {
				t.Fatalf("a refused call wrote %s = %d", k, n)
			}
		}
	})

	// Keys are the caller's only while RunScript or RunScripts runs
	// (core.ScriptRunner): limiters build them in memory they reuse, so
	// a store copies any key it keeps. Here the memory a call's keys
	// were built in is overwritten once the call returns, with another
	// key of the same length: the state must stay at the key the call
	// named.
	t.Run("KeysAreTheCallersOnlyDuringTheCall", func(t *testing.T) {
		id := time.Now().UnixNano()
		name := func(i int) string { return fmt.Sprintf("adaptertest:{lent:%d:%d}", id, i) }
		buf := make([]byte, 0, 64)
		lend := func(i int) string {
			buf = append(buf[:0], name(i)...)
			return unsafe.String(unsafe.SliceData(buf), len(buf))
		}
		if _, err := runner.RunScript(ctx, incr, []string{lend(1)}, []int64{1}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := runner.RunScript(ctx, incr, []string{lend(2)}, []int64{2}, nil); err != nil {
			t.Fatal(err)
		}
		if batches {
			res := br.RunScripts(ctx, []core.ScriptCall{{Script: incr, Keys: []string{lend(3)}, Args: []int64{3}}})
			if len(res) != 1 || res[0].Err != nil {
				t.Fatalf("RunScripts: %+v", res)
			}
			lend(4)
		}
		for i, want := range []int64{1, 2} {
			if n := read(t, name(i+1)); n != want {
				t.Errorf("%s = %d after a call that wrote %d there and memory reused for another key", name(i+1), n, want)
			}
		}
		if batches {
			if n := read(t, name(3)); n != 3 {
				t.Errorf("%s = %d after a batch call that wrote 3 there and memory reused for another key", name(3), n)
			}
		}
		if n := read(t, name(4)); n != 0 {
			t.Errorf("%s = %d: no call named it", name(4), n)
		}

		// The same through a limiter, which lends every store keys built
		// in memory it reuses: each user's decisions count on its own key.
		lim, err := tokenbucket.New(runner, tokenbucket.Config{Capacity: 100, RefillRate: 1, RefillInterval: time.Hour,
			Prefix: fmt.Sprintf("adaptertest:lent:%d:", id), Clock: fakeclock.New(time.Now())})
		if err != nil {
			t.Fatal(err)
		}
		cost := map[string]int64{"alice": 1, "bobby": 2, "carol": 0}
		for i := 0; i < 4; i++ {
			for _, user := range []string{"alice", "bobby"} {
				if _, err := lim.AllowN(ctx, user, cost[user]); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, user := range []string{"alice", "bobby", "carol"} {
			if d, err := lim.Peek(ctx, user); err != nil || d.Remaining != 100-4*cost[user] {
				t.Errorf("Peek(%s): %+v, %v; want %d remaining", user, d, err, 100-4*cost[user])
			}
		}
	})

	t.Run("EndedContextChangesNothing", func(t *testing.T) {
		key := []string{fmt.Sprintf("adaptertest:{ended:%d}", time.Now().UnixNano())}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		expired, cancel2 := context.WithDeadline(ctx, time.Unix(1, 0))
		defer cancel2()
		ended := map[string]struct {
			ctx  context.Context
			want error
		}{"cancelled": {cancelled, context.Canceled}, "past deadline": {expired, context.DeadlineExceeded}}

		lim, err := tokenbucket.New(runner, tokenbucket.Config{Capacity: 5, RefillRate: 1, RefillInterval: time.Hour,
			Prefix: fmt.Sprintf("adaptertest:ended:%d:", time.Now().UnixNano()), Clock: fakeclock.New(time.Now())})
		if err != nil {
			t.Fatal(err)
		}
		var before string
		if size != nil {
			before = size(t)
		}
		for name, e := range ended {
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, core.ErrStore) || !errors.Is(err, e.want) {
					t.Errorf("%s, %s context: %v; want ErrStore wrapping %v", what, name, err, e.want)
				}
			}
			_, err := runner.RunScript(e.ctx, incr, key, []int64{1}, nil)
			check("RunScript", err)
			if batches {
				res := br.RunScripts(e.ctx, []core.ScriptCall{{Script: incr, Keys: key, Args: []int64{1}}, {Script: incr, Keys: key, Args: []int64{2}}})
				if len(res) != 2 {
					t.Fatalf("RunScripts: %d results for 2 calls", len(res))
				}
				for _, r := range res {
					check("RunScripts", r.Err)
				}
			}
			_, err = lim.AllowN(e.ctx, "u", 2)
			check("AllowN", err)
			for _, r := range lim.AllowMany(e.ctx, []core.Request{{Key: "u", N: 1}, {Key: "v", N: 1}}) {
				check("AllowMany", r.Err)
			}
		}
		if n := read(t, key[0]); n != 0 {
			t.Errorf("calls with an ended context wrote %s = %d", key[0], n)
		}
		for _, k := range []string{"u", "v"} {
			if d, err := lim.Peek(ctx, k); err != nil || d.Remaining != 5 {
				t.Errorf("Peek(%s) after AllowN and AllowMany with ended contexts: %+v, %v; want all 5 left", k, d, err)
			}
		}
		if size != nil {
			if after := size(t); after != before {
				t.Errorf("the store held %s keys before the calls with ended contexts, %s after", before, after)
			}
		}
	})
}

// Unusable checks a store that cannot run scripts (a zero value, a nil
// pointer), as the store contract
// (core/store.go) says: its StoreName (core.StoreNamer) is "", a limiter
// refuses it when it is built (core.ErrInvalidConfig), and its calls
// return errors wrapping core.ErrStore and core.ErrInvalidConfig, whose
// text holds want. Nothing panics.
func Unusable(t *testing.T, runner core.ScriptRunner, want string) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%T: panic: %v", runner, p)
		}
	}()
	n, ok := runner.(core.StoreNamer)
	if !ok {
		t.Fatalf("%T is not a core.StoreNamer", runner)
	}
	if name := n.StoreName(); name != "" {
		t.Errorf("StoreName() = %q, want \"\" for a store that cannot run scripts", name)
	}
	lim, err := tokenbucket.New(runner, tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Second})
	if !errors.Is(err, core.ErrInvalidConfig) || lim != nil {
		t.Errorf("tokenbucket.New: %v, %v; want ErrInvalidConfig", lim, err)
	}
	ctx := context.Background()
	key := []string{"adaptertest:{unusable}"}
	unusable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, core.ErrStore) || !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want ErrStore and ErrInvalidConfig, saying %q", what, err, want)
		}
	}
	got, err := runner.RunScript(ctx, incr, key, []int64{1}, nil)
	unusable("RunScript", err)
	if got != nil {
		t.Errorf("RunScript replied %v", got)
	}
	if br, ok := runner.(core.BatchRunner); ok {
		res := br.RunScripts(ctx, []core.ScriptCall{{Script: incr, Keys: key, Args: []int64{1}}, {Script: get, Keys: key}})
		if len(res) != 2 {
			t.Fatalf("RunScripts: %d results for 2 calls", len(res))
		}
		for i, r := range res {
			unusable(fmt.Sprintf("RunScripts call %d", i), r.Err)
		}
	}
}

// Miniredis checks a Redis adapter against miniredis, whose EVAL_RO
// refuses TIME: built without WithoutReadOnlyCommands, a read-only script
// in server-time mode (a limiter's Peek) fails with an error that names
// the option; built with it, it works. addr is a miniredis server the
// caller started (miniredis.RunT), so that only the store modules, whose
// tests run on it anyway, require miniredis. newRunner builds the adapter
// for addr, with the option when plainRO is set.
func Miniredis(t *testing.T, addr string, newRunner func(t *testing.T, addr string, plainRO bool) core.ScriptRunner) {
	ctx := context.Background()
	for _, plainRO := range []bool{false, true} {
		lim, err := tokenbucket.New(newRunner(t, addr, plainRO), tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour, Prefix: fmt.Sprintf("adaptertest:mini:%v:", plainRO)})
		if err != nil {
			t.Fatal(err)
		}
		if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed {
			t.Fatalf("plainRO %v: Allow: %+v, %v", plainRO, d, err)
		}
		d, err := lim.Peek(ctx, "k")
		if plainRO {
			if err != nil || d.Remaining != 1 {
				t.Fatalf("with WithoutReadOnlyCommands: Peek: %+v, %v", d, err)
			}
			continue
		}
		if !errors.Is(err, core.ErrStore) || !strings.Contains(err.Error(), "WithoutReadOnlyCommands()") || !strings.Contains(err.Error(), "TIME") {
			t.Fatalf("without WithoutReadOnlyCommands: Peek: %v; want ErrStore naming TIME and WithoutReadOnlyCommands()", err)
		}
	}
}
