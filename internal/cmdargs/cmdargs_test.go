package cmdargs

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/core"
)

func TestCall(t *testing.T) {
	for _, tt := range []struct {
		keys []string
		args []int64
	}{
		{[]string{"rk:tb:{user:1}"}, []int64{-1, 1, 1 << 40, math.MaxInt64, math.MinInt64, 0}},
		{nil, []int64{1}},
		{[]string{"", "a"}, nil},
		{[]string{strings.Repeat("k", 300)}, []int64{7}}, // too big for a frame
		{[]string{"k"}, make([]int64, 20)},               // too many strings for a frame
	} {
		kb := []byte(strings.Join(tt.keys, "\x00"))
		keys := strings.Split(string(kb), "\x00")
		if tt.keys == nil {
			keys = nil
		}
		h, k, a := Call("EVALSHA", "sha", keys, tt.args)
		clear(kb) // the caller's bytes may change once Call returns
		if want := []string{"EVALSHA", "sha", strconv.Itoa(len(tt.keys))}; !slices.Equal(h, want) {
			t.Errorf("head %q, want %q", h, want)
		}
		if !slices.Equal(k, tt.keys) {
			t.Errorf("keys %q, want %q", k, tt.keys)
		}
		for i, v := range tt.args {
			if want := strconv.FormatInt(v, 10); a[i] != want {
				t.Errorf("arg %d = %q, want %q", i, a[i], want)
			}
		}
		if len(a) != len(tt.args) {
			t.Errorf("%d args, want %d", len(a), len(tt.args))
		}
	}
}

func TestBatch(t *testing.T) {
	calls := []core.ScriptCall{
		{Keys: []string{"a{1}"}, Args: []int64{1, -2}},
		{Keys: nil, Args: []int64{math.MinInt64}},
		{Keys: []string{"b{1}", "c{1}"}, Args: nil},
	}
	heads, keys, args := Batch(len(calls), func(i int) (string, string, []string, []int64) {
		return "EVAL", strconv.Itoa(i), calls[i].Keys, calls[i].Args
	})
	for i, c := range calls {
		if want := []string{"EVAL", strconv.Itoa(i), strconv.Itoa(len(c.Keys))}; !slices.Equal(heads[i], want) {
			t.Errorf("call %d head %q, want %q", i, heads[i], want)
		}
		if !slices.Equal(keys[i], c.Keys) && !(len(keys[i]) == 0 && len(c.Keys) == 0) {
			t.Errorf("call %d keys %q, want %q", i, keys[i], c.Keys)
		}
		if len(args[i]) != len(c.Args) {
			t.Fatalf("call %d: %d args, want %d", i, len(args[i]), len(c.Args))
		}
		for j, v := range c.Args {
			if args[i][j] != strconv.FormatInt(v, 10) {
				t.Errorf("call %d arg %d = %q", i, j, args[i][j])
			}
		}
		// Appending to one call's slices must not clobber the next call's.
		_ = append(heads[i], "x")
		_ = append(keys[i], "x")
		_ = append(args[i], "x")
	}
	if keys[2][0] != "b{1}" || args[1][0] != "-9223372036854775808" {
		t.Fatalf("a call's slices overlap the next one's: %q %q", keys, args)
	}
}

func TestBatchAllocations(t *testing.T) {
	calls := make([]core.ScriptCall, 100)
	for i := range calls {
		calls[i] = core.ScriptCall{Keys: []string{"rk:tb:{user:" + strconv.Itoa(i) + "}"}, Args: []int64{-1, 1, 1 << 40, 1 << 40, 1000000, 0}}
	}
	part := func(i int) (string, string, []string, []int64) { return "EVALSHA", "sha", calls[i].Keys, calls[i].Args }
	if n := testing.AllocsPerRun(100, func() { Batch(len(calls), part) }); n != 3 {
		t.Fatalf("%v allocations for a batch of 100, want 3", n)
	}
}

func TestCallAllocations(t *testing.T) {
	keys, args := []string{"rk:tb:{user:1}"}, []int64{-1, 1, 1 << 40, 1 << 40, 1000000, 0}
	if n := testing.AllocsPerRun(100, func() { Call("EVALSHA", "sha", keys, args) }); n != 1 {
		t.Fatalf("%v allocations, want 1", n)
	}
}
