// Package adaptertest checks what every store must do beyond making the
// same decisions (which the conformance suite checks).
//
// [RunStore] checks what every store promises, the memory store included
// (the store contract, core/store.go): a call whose context has ended
// changes nothing, a script whose keys span cluster slots is refused with
// the same error everywhere, keys are the caller's only during a call (a
// store copies what it keeps), and the store names itself
// (core.StoreNamer) after its directory. [Run] adds what a Redis adapter
// must do against a real server: load scripts again after NOSCRIPT, send
// read-only scripts as EVALSHA_RO (as EVALSHA on a server without it),
// check the shape of every reply without panicking, and wrap every
// failure with core.ErrStore. [Unusable] checks a store that cannot run
// scripts (a zero value, a nil pointer), and [Miniredis] the error that
// names WithoutReadOnlyCommands.
//
// It is one of ratekit's own test kits (testkit/): importable, so that
// the stores' modules can use it, with no promise of compatibility.
package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/internal/slot"
)

// Harness is the adapter under test.
type Harness struct {
	// Runner runs scripts on the server that Do talks to.
	Runner core.ScriptRunner
	// Name is the Runner's StoreName: its directory under store/.
	Name string
	// Do sends one raw command to the same server (SCRIPT FLUSH, PTTL...)
	// and returns its reply as a string ("" for nil) or an error.
	Do func(ctx context.Context, args ...string) (string, error)
	// Dead is a runner whose server is unreachable.
	Dead core.ScriptRunner
	// OneNode says the Runner's client is one node that lets a script's
	// keys span slots, so the Runner must report it (core.SingleNode) and
	// run batch calls marked AnySlot; otherwise it must refuse them.
	OneNode bool
}

func noTwin(core.Tx, []string, []int64, []int64) ([]int64, error) { return nil, errors.New("no twin") }

// Run runs the adapter tests as subtests of t, RunStore's among them (with
// DBSIZE as the count of keys).
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	do := func(t *testing.T, args ...string) string {
		t.Helper()
		v, err := h.Do(ctx, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return v
	}

	t.Run("NoScriptFallsBackToEval", func(t *testing.T) {
		s := core.NewScript("echo", `return {tonumber(ARGV[1]) + 1, #KEYS}`, noTwin, false)
		ro := core.NewScript("echo-ro", `return {tonumber(ARGV[1]) + 2}`, noTwin, true)
		for i := int64(0); i < 3; i++ {
			do(t, "SCRIPT", "FLUSH")
			got, err := h.Runner.RunScript(ctx, s, []string{"adaptertest:{a}"}, []int64{i}, nil)
			if err != nil || len(got) != 2 || got[0] != i+1 || got[1] != 1 {
				t.Fatalf("after SCRIPT FLUSH: %v, %v", got, err)
			}
			got, err = h.Runner.RunScript(ctx, ro, nil, []int64{i}, nil)
			if err != nil || len(got) != 1 || got[0] != i+2 {
				t.Fatalf("read-only after SCRIPT FLUSH: %v, %v", got, err)
			}
		}
	})

	t.Run("ReadOnlyScriptsCannotWrite", func(t *testing.T) {
		const lua = `redis.call('SET', KEYS[1], 'x'); return {1}`
		key := []string{"adaptertest:{ro}"}
		if _, err := h.Do(ctx, "EVALSHA_RO", core.NewScript("w", lua, noTwin, true).SHA1(), "0"); err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
			// Redis before 7.0: the store sends read-only scripts as
			// EVALSHA and EVAL, which the server cannot hold to reading.
			t.Logf("the server has no EVALSHA_RO (%v): checking that read-only scripts run as EVALSHA", err)
			for i := 0; i < 2; i++ {
				if _, err := h.Runner.RunScript(ctx, core.NewScript("w", lua, noTwin, true), key, nil, nil); err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
			}
			if v := do(t, "EXISTS", key[0]); v != "1" {
				t.Fatal("the script did not run")
			}
			do(t, "DEL", key[0])
			return
		}
		// Twice: first after NOSCRIPT (EVAL_RO), then loaded (EVALSHA_RO).
		for i := 0; i < 2; i++ {
			if _, err := h.Runner.RunScript(ctx, core.NewScript("w", lua, noTwin, true), key, nil, nil); err == nil || !errors.Is(err, core.ErrStore) {
				t.Fatalf("run %d: a read-only script wrote (err = %v): not sent as EVALSHA_RO/EVAL_RO", i, err)
			}
		}
		if v := do(t, "EXISTS", key[0]); v != "0" {
			t.Fatalf("the read-only script's write took effect")
		}
		if _, err := h.Runner.RunScript(ctx, core.NewScript("w", lua, noTwin, false), key, nil, nil); err != nil {
			t.Fatalf("the same script, not read-only: %v", err)
		}
	})

	t.Run("BadRepliesAreErrors", func(t *testing.T) {
		for _, lua := range []string{
			`return 'text'`,
			`return 7`,
			`return nil`,
			`return {1, 'x'}`,
			`return {1, false}`,
			`return {1, {2}}`,
			`return {1, 2.5, 'a'}`,
			`return redis.status_reply('OK')`,
		} {
			got, err := h.Runner.RunScript(ctx, core.NewScript("bad", lua, noTwin, false), nil, nil, nil)
			if !errors.Is(err, core.ErrStore) || !errors.Is(err, core.ErrUnexpectedReply) {
				t.Errorf("%s: got %v, %v; want ErrStore and ErrUnexpectedReply", lua, got, err)
			}
		}
		got, err := h.Runner.RunScript(ctx, core.NewScript("empty", `return {}`, noTwin, false), nil, nil, nil)
		if err != nil || len(got) != 0 {
			t.Errorf("empty array: %v, %v", got, err)
		}
	})

	t.Run("ScriptErrorsAreStoreErrors", func(t *testing.T) {
		_, err := h.Runner.RunScript(ctx, core.NewScript("boom", `return redis.error_reply('ERR boom')`, noTwin, false), nil, nil, nil)
		if !errors.Is(err, core.ErrStore) || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("got %v; want ErrStore naming the server's error", err)
		}
	})

	t.Run("Store", func(t *testing.T) {
		runStore(t, h.Runner, func(t *testing.T) string { return do(t, "DBSIZE") }, h.Name)
	})

	t.Run("UnreachableServer", func(t *testing.T) {
		if h.Dead == nil {
			t.Fatal("Harness.Dead is nil")
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := h.Dead.RunScript(cctx, core.NewScript("echo", `return {1}`, noTwin, false), nil, nil, nil)
		if !errors.Is(err, core.ErrStore) {
			t.Fatalf("unreachable server: %v; want ErrStore", err)
		}
	})

	t.Run("DeadlineDuringCall", func(t *testing.T) {
		// The server answers nothing for 300 ms; a call with 50 ms to
		// live that fails says its deadline passed (errors.Is), however
		// the client noticed it (its context, or a read deadline). A client
		// that waits for the reply past the deadline (go-redis without
		// ContextTimeoutEnabled, in a pipeline) succeeds instead.
		// Every client, every command: ALL, the default since 6.2, which
		// added the argument (5.0 and 6.0 have no other mode).
		do(t, "CLIENT", "PAUSE", "300")
		defer time.Sleep(350 * time.Millisecond) // the pause ends by itself
		failed := 0
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				return
			}
			failed++
			if !errors.Is(err, core.ErrStore) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s past its deadline: %v; want ErrStore wrapping context.DeadlineExceeded", what, err)
			}
		}
		defer func() {
			if failed == 0 {
				t.Error("no call failed past its deadline: the server was not paused")
			}
		}()
		echo := core.NewScript("adaptertest-echo", `return {1}`, noTwin, false)
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := h.Runner.RunScript(cctx, echo, []string{"adaptertest:{deadline}"}, nil, nil)
		check("RunScript", err)
		if br, ok := h.Runner.(core.BatchRunner); ok {
			cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			for _, r := range br.RunScripts(cctx, []core.ScriptCall{{Script: echo, Keys: []string{"adaptertest:{deadline}"}}, {Script: echo, Keys: []string{"adaptertest:{deadline2}"}}}) {
				check("RunScripts", r.Err)
			}
		}
	})

	t.Run("TokenBucketKeyAndTTL", func(t *testing.T) {
		clock := fakeclock.New(time.Now())
		lim, err := tokenbucket.New(h.Runner, tokenbucket.Config{Capacity: 10, RefillRate: 1, RefillInterval: 10 * time.Second, Prefix: "adaptertest:tb:", Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		do(t, "DEL", "adaptertest:tb:{u%7B1%7D}")
		if d, err := lim.AllowN(ctx, "u{1}", 3); err != nil || !d.Allowed || d.ResetAfter != 30*time.Second {
			t.Fatalf("AllowN: %+v, %v", d, err)
		}
		// Time to full (30 s) plus the minute of slack of client-clock mode.
		pttl := do(t, "PTTL", "adaptertest:tb:{u%7B1%7D}")
		if pttl <= "85000" || len(pttl) != 5 || pttl > "90000" {
			t.Fatalf("PTTL = %s ms, want just under 90000", pttl)
		}
		if d, err := lim.Peek(ctx, "u{1}"); err != nil || d.Remaining != 7 {
			t.Fatalf("Peek: %+v, %v", d, err)
		}
		if err := lim.Reset(ctx, "u{1}"); err != nil {
			t.Fatal(err)
		}
		if v := do(t, "EXISTS", "adaptertest:tb:{u%7B1%7D}"); v != "0" {
			t.Fatal("Reset left the key")
		}
	})

	t.Run("BatchAfterScriptFlush", func(t *testing.T) {
		// Stores without core.BatchRunner still serve AllowMany, call by
		// call; the pipelined path is checked where there is one.
		br, ok := h.Runner.(core.BatchRunner)
		echo := core.NewScript("echo", `return {tonumber(ARGV[1])}`, noTwin, false)
		other := core.NewScript("echo2", `return {tonumber(ARGV[1]) * 2}`, noTwin, false)
		for round := 0; ok && round < 3; round++ {
			do(t, "SCRIPT", "FLUSH")
			var calls []core.ScriptCall
			for i := int64(0); i < 10; i++ {
				s := echo
				if i%3 == 0 {
					s = other
				}
				calls = append(calls, core.ScriptCall{Script: s, Keys: []string{fmt.Sprintf("adaptertest:{b%d}", i)}, Args: []int64{i}})
			}
			calls = append(calls, core.ScriptCall{Script: echo, Keys: []string{"p:{a}", "p:{b}"}})
			res := br.RunScripts(ctx, calls)
			if len(res) != len(calls) {
				t.Fatalf("%d results for %d calls", len(res), len(calls))
			}
			for i, r := range res[:10] {
				want := int64(i)
				if i%3 == 0 {
					want *= 2
				}
				if r.Err != nil || len(r.Reply) != 1 || r.Reply[0] != want {
					t.Fatalf("round %d call %d: %v, %v", round, i, r.Reply, r.Err)
				}
			}
			if !errors.Is(res[10].Err, core.ErrStore) {
				t.Fatalf("keys in two slots: %v", res[10].Err)
			}
		}
		// A limiter's batch decides in order on one key.
		lim, err := tokenbucket.New(h.Runner, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Hour, Prefix: fmt.Sprintf("adaptertest:batch:%d:", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		do(t, "SCRIPT", "FLUSH")
		res := lim.AllowMany(ctx, []core.Request{{Key: "k", N: 2}, {Key: "k", N: 2}, {Key: "j", N: 3}, {Key: "k", N: 1}, {Key: "", N: 1}, {Key: "k", N: 9}})
		var got []string
		for _, r := range res {
			got = append(got, fmt.Sprint(r.Decision.Allowed, r.Decision.Remaining, r.Err != nil))
		}
		want := []string{"true 1 false", "false 1 false", "true 0 false", "true 0 false", "false 0 true", "false 0 true"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("AllowMany = %v, want %v", got, want)
		}

		// After a flush the server may know one script of a batch and not
		// another: the call it must load (NOSCRIPT, then EVAL) runs after
		// the calls that followed it, and calls on its key wait for it.
		lim, err = tokenbucket.New(h.Runner, tokenbucket.Config{Capacity: 100, RefillRate: 1, RefillInterval: time.Hour, Prefix: fmt.Sprintf("adaptertest:order:%d:", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		do(t, "SCRIPT", "FLUSH")
		if _, err := lim.Allow(ctx, "other"); err != nil { // loads the single script, not the batch's
			t.Fatal(err)
		}
		// 64 requests in a batch call, the 65th in a call of its own: sent
		// in one pipeline, it would run first.
		for i, r := range lim.AllowMany(ctx, slices.Repeat([]core.Request{{Key: "k", N: 1}}, 65)) {
			if r.Err != nil || !r.Decision.Allowed || r.Decision.Remaining != int64(99-i) {
				t.Fatalf("request %d of 65 on one key after SCRIPT FLUSH: %+v, want Remaining %d", i, r, 99-i)
			}
		}
		if !ok {
			return
		}
		key := fmt.Sprintf("adaptertest:{order-%d}", time.Now().UnixNano())
		appendA := core.NewScript("appendA", `return {redis.call('APPEND', KEYS[1], 'a')}`, noTwin, false)
		appendB := core.NewScript("appendB", `return {redis.call('APPEND', KEYS[1], 'b')}`, noTwin, false)
		do(t, "SCRIPT", "FLUSH")
		br.RunScripts(ctx, []core.ScriptCall{{Script: appendA, Keys: []string{key}}})
		for i, r := range br.RunScripts(ctx, []core.ScriptCall{{Script: appendB, Keys: []string{key}}, {Script: appendA, Keys: []string{key}}}) {
			if r.Err != nil {
				t.Fatalf("call %d: %v", i, r.Err)
			}
		}
		if v := do(t, "GET", key); v != "aba" {
			t.Fatalf("%s = %q after appending a, then b (a script the server had to load) and a in one batch; want \"aba\"", key, v)
		}
		do(t, "DEL", key)
	})

	t.Run("OneNodeBatches", func(t *testing.T) {
		sn, ok := h.Runner.(core.SingleNode)
		if got := ok && sn.SingleNode(); got != h.OneNode {
			t.Fatalf("%T: SingleNode() = %v, want %v", h.Runner, got, h.OneNode)
		}
		br, ok := h.Runner.(core.BatchRunner)
		if !ok {
			return
		}
		keys := []string{"adaptertest:{any-a}", "adaptertest:{any-b}", "adaptertest:{any-c}"}
		for _, k := range keys {
			do(t, "DEL", k)
		}
		res := br.RunScripts(ctx, []core.ScriptCall{{Script: incr, Keys: keys, Args: []int64{5}, AnySlot: true}})
		if !h.OneNode {
			if !errors.Is(res[0].Err, core.ErrStore) || !errors.Is(res[0].Err, slot.ErrCrossSlot) {
				t.Fatalf("AnySlot call on a store that is not one node: %v, %v; want ErrCrossSlot", res[0].Reply, res[0].Err)
			}
			return
		}
		if res[0].Err != nil || fmt.Sprint(res[0].Reply) != "[5 5 5]" {
			t.Fatalf("AnySlot call: %v, %v", res[0].Reply, res[0].Err)
		}
		for _, k := range keys {
			if v := do(t, "GET", k); v != "5" {
				t.Fatalf("%s = %q after the AnySlot call, want 5", k, v)
			}
		}
		// A limiter's batch of keys in many slots decides each, in order.
		lim, err := tokenbucket.New(h.Runner, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour, Prefix: fmt.Sprintf("adaptertest:any:%d:", time.Now().UnixNano())})
		if err != nil {
			t.Fatal(err)
		}
		var reqs []core.Request
		for round := 0; round < 3; round++ {
			for i := 0; i < 50; i++ {
				reqs = append(reqs, core.Request{Key: fmt.Sprint("u", i), N: 1})
			}
		}
		for i, r := range lim.AllowMany(ctx, reqs) {
			round := i / 50
			if r.Err != nil || r.Decision.Allowed != (round < 2) || r.Decision.Remaining != int64(max(1-round, 0)) {
				t.Fatalf("request %d (round %d on its key): %+v", i, round, r)
			}
		}
	})

	t.Run("WindowsKeepTheirTTL", func(t *testing.T) {
		// A write that keeps the end its key's TTL was set for (a request
		// in the same window) keeps the TTL (SET ... KEEPTTL). PEXPIRE sets
		// the TTL apart here, so that a TTL kept tells from one written
		// again. A window opened again gets a TTL to its own end: at most
		// two windows and the minute of client-clock slack.
		clock := fakeclock.New(time.Now())
		fw, err := fixedwindow.New(h.Runner, fixedwindow.Config{Limit: 10, Window: time.Hour, Prefix: "adaptertest:fwttl:", Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := slidingcounter.New(h.Runner, slidingcounter.Config{Limit: 10, Window: time.Hour, Prefix: "adaptertest:scttl:", Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			lim core.Limiter
			key string
		}{{fw, "adaptertest:fwttl:{k}"}, {sc, "adaptertest:scttl:{k}"}} {
			allow := func(n int64) {
				t.Helper()
				if d, err := c.lim.AllowN(ctx, "k", n); err != nil || !d.Allowed {
					t.Fatalf("%s: AllowN(%d): %+v, %v", c.key, n, d, err)
				}
			}
			pttl := func(lo, hi int64) {
				t.Helper()
				v := do(t, "PTTL", c.key)
				if p, err := strconv.ParseInt(v, 10, 64); err != nil || p < lo || p > hi {
					t.Fatalf("%s: PTTL = %s ms, want %d to %d", c.key, v, lo, hi)
				}
			}
			const most, apart = 7_260_000, 9_000_000
			do(t, "DEL", c.key)
			allow(1)
			pttl(60_000, most)
			do(t, "PEXPIRE", c.key, strconv.Itoa(apart))
			allow(2)
			pttl(apart-60_000, apart)
			clock.Advance(time.Hour)
			allow(1)
			pttl(60_000, most)
		}
	})

	t.Run("TokenBucketServerTime", func(t *testing.T) {
		lim, err := tokenbucket.New(h.Runner, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Hour, Prefix: "adaptertest:st:"})
		if err != nil {
			t.Fatal(err)
		}
		do(t, "DEL", "adaptertest:st:{k}")
		for i := 0; i < 2; i++ {
			if d, err := lim.Allow(ctx, "k"); err != nil || !d.Allowed {
				t.Fatalf("request %d: %+v, %v", i, d, err)
			}
		}
		d, err := lim.Allow(ctx, "k")
		if err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Hour {
			t.Fatalf("third request: %+v, %v", d, err)
		}
		// Server time: the TTL carries no slack.
		if pttl := do(t, "PTTL", "adaptertest:st:{k}"); len(pttl) != 7 || pttl > "7200000" || pttl < "7100000" {
			t.Fatalf("PTTL = %s ms, want just under two hours", pttl)
		}
	})
}
