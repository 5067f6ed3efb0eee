package conformance_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
)

// The broken stores hold the memory store in a named field, not embedded:
// embedded, its Lock (core.LocalStore) would be theirs, and limiters
// would decide in process, around their RunScript.

// offByOne answers like the memory store, except that every 7th reply
// reports one more remaining.
type offByOne struct {
	store *memory.Store
	calls atomic.Int64
}

func (o *offByOne) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	r, err := o.store.RunScript(ctx, s, keys, args, reply)
	if err == nil && len(r) > 1 && o.calls.Add(1)%7 == 0 {
		r[1]++
	}
	return r, err
}

// forgetful loses a key's state now and then, as a store whose TTLs were
// too short would.
type forgetful struct {
	store *memory.Store
	calls atomic.Int64
}

func (f *forgetful) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	if f.calls.Add(1)%5 == 0 {
		f.store.RunScript(ctx, resetScript, keys, nil, nil)
	}
	return f.store.RunScript(ctx, s, keys, args, reply)
}

// ignoresCtx runs every script, even when the caller's context has
// ended.
type ignoresCtx struct{ store *memory.Store }

func (i ignoresCtx) RunScript(_ context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return i.store.RunScript(context.Background(), s, keys, args, reply)
}

var resetScript = core.NewScript("del", "", func(tx core.Tx, keys []string, _ []int64, _ []int64) ([]int64, error) {
	for _, k := range keys {
		tx.Del(k)
	}
	return nil, nil
}, false)

// TestBrokenStore runs the suite on a broken store when the parent test
// asks for it (in a child process, since the suite must fail there).
func TestBrokenStore(t *testing.T) {
	mode := os.Getenv("CONFORMANCE_BROKEN")
	if mode == "" {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var r core.ScriptRunner = &offByOne{store: s}
	switch mode {
	case "forgetful":
		r = &forgetful{store: s}
	case "ignoresctx":
		r = ignoresCtx{s}
	}
	conformance.Run(t, conformance.Harness{Runner: r})
}

// TestSuiteCatchesBrokenStores: the suite fails on each broken store, and
// says why. That it passes a sound one is store/memory's TestConformance
// (the memory store, as here) and every other store's.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	for mode, says := range map[string]string{
		"offbyone":   "reference",
		"forgetful":  "reference",
		"ignoresctx": "ended context",
	} {
		t.Run(mode, func(t *testing.T) {
			// -test.failfast: the first failing property is the answer; the
			// rest of the suite, which a store that fails one way may pass,
			// would only run (and shrink its failures) for minutes. The
			// properties that decide against the reference alone (an
			// algorithm's, policy, calendar, concurrency; not corrupt or
			// change, whose own checks word their failures otherwise), so
			// that which one fails first does not change what it says.
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStore$/^[a-z]+$/^$", "-rapid.nofailfile", "-test.count=1", "-test.failfast")
			cmd.Env = append(os.Environ(), "CONFORMANCE_BROKEN="+mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a broken store:\n%s", out)
			}
			if !strings.Contains(string(out), says) {
				t.Fatalf("the suite failed, but not saying %q:\n%s", says, out)
			}
		})
	}
}
