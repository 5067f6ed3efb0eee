package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
)

// A poison is state that no ratekit limiter writes, put at a limiter's key
// by a script of its own: Lua for servers, a twin for the memory store.
type poison struct {
	desc   string
	script *core.Script
}

func newPoison(desc, lua string, vals ...int64) poison {
	return poison{desc: desc, script: core.NewScript("poison", lua+" return {}",
		func(tx core.Tx, keys []string, _ []int64, reply []int64) ([]int64, error) {
			copy(tx.Put(keys[0], len(vals), time.Hour), vals)
			return reply, nil
		}, false)}
}

// stringPoisons spoil the algorithms that keep one string per key.
var stringPoisons = []poison{
	newPoison("a number beyond 2^53", `redis.call('SET', KEYS[1], '99999999999999999999999:1:1:1', 'PX', 3600000)`, 1<<60, 1, 1, 1),
	newPoison("numbers just beyond what ratekit stores", `redis.call('SET', KEYS[1], '6755399441055745:6755399441055745:6755399441055745:6755399441055745', 'PX', 3600000)`, 6755399441055745, 6755399441055745, 6755399441055745, 6755399441055745),
	newPoison("too many fields", `redis.call('SET', KEYS[1], '1:2:3:4:5:6:7', 'PX', 3600000)`, 1, 2, 3, 4, 5, 6, 7),
	newPoison("too few fields", `redis.call('SET', KEYS[1], '7', 'PX', 3600000)`, 7),
	newPoison("not a number", `redis.call('SET', KEYS[1], 'abc', 'PX', 3600000)`),
	newPoison("a negative number", `redis.call('SET', KEYS[1], '-5:3:1:1', 'PX', 3600000)`, -5, 3, 1, 1),
	newPoison("another type", `redis.call('HSET', KEYS[1], 'f', 'v'); redis.call('PEXPIRE', KEYS[1], 3600000)`, -1),
}

// packedPoisons spoil state of n integers in its packed form (the byte 255,
// then big-endian doubles; internal/engine/prelude.lua), which a server
// with Lua's struct library reads without a parse. Where the server has
// none (miniredis) each writes text that is not a state either. The twin's
// values are what the memory store keeps in their place: integers it
// refuses alike (it cannot hold a fraction, NaN or an infinity).
// old is the length of an older shape of the state the algorithm also
// reads (engine.Spec.OldStateLen), 0 for none: "one integer too few" is
// then one fewer than that.
func packedPoisons(n, old int) []poison {
	packed := func(desc string, tag, first string, count int, twin ...int64) poison {
		vals := make([]string, count)
		for i := range vals {
			vals[i] = "1"
		}
		if count > 0 {
			vals[0] = first
		}
		lua := fmt.Sprintf(`local struct = rawget(_G, 'struct')
if not struct then redis.call('SET', KEYS[1], 'packed', 'PX', 3600000) return {} end
redis.call('SET', KEYS[1], struct.pack('>B%s', %s, %s), 'PX', 3600000)`,
			strings.Repeat("d", count), tag, strings.Join(vals, ", "))
		return newPoison("packed: "+desc, lua, twin...)
	}
	fewer := n - 1
	if old == fewer {
		fewer--
	}
	ones := func(count int, first int64) []int64 {
		v := make([]int64, count)
		for i := range v {
			v[i] = 1
		}
		v[0] = first
		return v
	}
	return []poison{
		packed("a number just beyond what ratekit stores", "255", "6755399441055745", n, ones(n, 6755399441055745)...),
		packed("a fraction", "255", "1.5", n, ones(n, -1)...),
		packed("a negative number", "255", "-5", n, ones(n, -5)...),
		packed("NaN", "255", "0/0", n, ones(n, -1)...),
		packed("an infinity", "255", "1/0", n, ones(n, -1)...),
		packed("one integer too many", "255", "1", n+1, ones(n+1, 1)...),
		packed("one integer too few", "255", "1", fewer, ones(fewer, -1)...),
		packed("a first byte ratekit does not write", "7", "1", n, ones(n, -1)...),
	}
}

// logPoisons spoil a sorted set of entries: the sliding log's, the state
// of every algorithm whose engine.Spec.StateLen is 0.
var logPoisons = []poison{
	newPoison("another type", `redis.call('SET', KEYS[1], 'abc', 'PX', 3600000)`, -5, 3),
	newPoison("a member ratekit did not write", `redis.call('ZADD', KEYS[1], 1, 'foreign'); redis.call('PEXPIRE', KEYS[1], 3600000)`, 5, 3),
	newPoison("a time beyond 2^53", `redis.call('ZADD', KEYS[1], '1e300', '1:0000000001'); redis.call('PEXPIRE', KEYS[1], 3600000)`, 1<<62),
	newPoison("a negative time", `redis.call('ZADD', KEYS[1], -5, '1:0000000001'); redis.call('PEXPIRE', KEYS[1], 3600000)`, -5),
}

// checkCorrupt puts each poison at a key of the algorithm on the store
// under test and on the reference, and checks that both refuse it in
// AllowN, Peek, Refund and AllowMany with an error wrapping core.ErrCorruptState
// that names the algorithm. The poisons follow the state the algorithm
// declares (engine.Spec.StateLen): StateLen integers in one string, or,
// with 0, a sorted set.
func checkCorrupt(t *rapid.T, h Harness, a algorithm) {
	v := a.draw(t, nil)
	_, ref, limClock := reference(t, h)
	defer ref.Close()
	poisons := logPoisons
	if n := v.stateLen; n > 0 {
		poisons = append(slices.Clone(stringPoisons), packedPoisons(n, v.oldStateLen)...)
	}
	ctx := context.Background()
	for _, p := range poisons {
		prefix := newPrefix()
		key := rapid.SampledFrom(keys).Draw(t, "key")
		for _, s := range []struct {
			name   string
			runner core.ScriptRunner
		}{{"reference", ref}, {"store", h.Runner}} {
			if _, err := s.runner.RunScript(ctx, p.script, []string{keyspace.Key(prefix+v.tag, key, "")}, nil, nil); err != nil {
				t.Fatalf("%s: writing %s: %v", s.name, p.desc, err)
			}
			lim, err := v.build(s.runner, prefix, limClock)
			if err != nil {
				t.Fatalf("%s: %v", v.desc, err)
			}
			_, errAllow := lim.AllowN(ctx, key, 1)
			_, errPeek := lim.Peek(ctx, key)
			_, errRefund := lim.Refund(ctx, key, 1)
			errs := []error{errAllow, errPeek, errRefund, lim.AllowMany(ctx, []core.Request{{Key: key, N: 1}})[0].Err}
			for i, err := range errs {
				if !errors.Is(err, core.ErrCorruptState) || !strings.Contains(err.Error(), a.name) {
					t.Fatalf("%s, %s: state with %s: call %d answered %v, want core.ErrCorruptState naming %s", v.desc, s.name, p.desc, i, err, a.name)
				}
			}
			if err := lim.Reset(ctx, key); err != nil {
				t.Fatalf("%s: Reset after corrupt state: %v", s.name, err)
			}
			if d, err := lim.AllowN(ctx, key, 1); err != nil || !d.Allowed {
				t.Fatalf("%s, %s: after Reset: %+v, %v", v.desc, s.name, d, err)
			}
		}
	}
}
