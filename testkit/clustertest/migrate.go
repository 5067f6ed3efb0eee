package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit"
	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/keyspace"
	"github.com/ratekit/ratekit/internal/slot"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// incr counts how many times it ran on its key.
var incr = core.NewScript("incr", `return {redis.call('INCR', KEYS[1])}`, noTwin, false)

// HalfMovedSlot checks that runner sends no script twice when a script of
// its batch is refused while a slot is half moved: a script on two keys of
// a slot that is MIGRATING, one key moved and the other not, answers
// TRYAGAIN and runs nowhere; the other scripts of the batch, on other slots
// of the same master, must run exactly once. (go-redis re-sent the whole
// batch of a master whose first command answered TRYAGAIN, up to
// MaxRedirects times: a decision counted four times.) It leaves the slot
// stable, where it was.
func HalfMovedSlot(t *testing.T, c *redistest.Cluster, runner core.BatchRunner) {
	ctx := context.Background()
	waitAgree(t, c)
	ms := Masters(t, c)
	src, dst := ms[0], ms[1]
	prefix := fmt.Sprintf("clustertest:half:%d:", time.Now().UnixNano())
	// Two keys of one slot of src, and a key of another slot of src.
	tag := keyOn(prefix, "half", src, -1)
	s := slot.Of(keyspace.Key(prefix, tag, ""))
	a, b := keyspace.Key(prefix, tag, ":a"), keyspace.Key(prefix, tag, ":b")
	other := keyspace.Key(prefix, keyOn(prefix, "other", src, s), "")

	if _, err := redistest.Command(src.Addr, "SET", a, "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := redistest.Command(src.Addr, "SCRIPT", "LOAD", incr.Lua()); err != nil {
		t.Fatal(err)
	}
	setSlot(t, dst, s, "IMPORTING", src.ID)
	setSlot(t, src, s, "MIGRATING", dst.ID)
	t.Cleanup(func() {
		for _, m := range []Master{src, dst} {
			if _, err := redistest.Command(m.Addr, "CLUSTER", "SETSLOT", strconv.Itoa(s), "STABLE"); err != nil {
				t.Errorf("SETSLOT %d STABLE on %s: %v", s, m.Addr, err)
			}
		}
		_, _ = redistest.Command(src.Addr, "DEL", a, other)
	})

	// a is on src, b nowhere: the pair's script answers TRYAGAIN on src.
	res := runner.RunScripts(ctx, []core.ScriptCall{
		{Script: two, Keys: []string{a, b}},
		{Script: incr, Keys: []string{other}},
	})
	t.Logf("the script on the split pair: %v", res[0].Err)
	if res[0].Err == nil {
		t.Errorf("the script on keys split by a half-moved slot ran: %v", res[0].Reply)
	}
	if res[1].Err != nil || len(res[1].Reply) != 1 {
		t.Fatalf("the script on another slot: %v, %v", res[1].Reply, res[1].Err)
	}
	n, err := redistest.Command(src.Addr, "GET", other)
	if err != nil {
		t.Fatal(err)
	}
	if n != "1" || res[1].Reply[0] != 1 {
		t.Errorf("the script on another slot of the same master ran %s times (it replied %d), want 1", n, res[1].Reply[0])
	}
}

// Migration checks that every decision runs exactly once while a slot
// holding the keys moves between two masters under concurrent load: once
// by hand (CLUSTER SETSLOT IMPORTING and MIGRATING, MIGRATE one key at a
// time, SETSLOT NODE), then back with redis-cli --cluster reshard. The
// load is AllowN on a fixed window, AllowMany on another, and AllowN on a
// policy of two fixed windows, on keys of the moving slot and on keys of
// other slots of both masters (which share pipelines with them). No limit
// is ever reached, so after each move every key's count, read with Peek
// (each limit's own limiter for the policy), must equal the requests
// allowed on it: none counted twice, none lost. A call the server refused
// before running it (TRYAGAIN, for a policy whose keys a move has split)
// counts nothing and is only logged; any other error fails the test.
//
// runner's client must not time out calls that run (a call that times out
// may have run): give it a generous read timeout.
func Migration(t *testing.T, c *redistest.Cluster, runner core.ScriptRunner) {
	waitAgree(t, c)
	ms := Masters(t, c)
	src, dst := ms[0], ms[1]
	// The slot moves from src, which owns slot 0, to dst and back. It is
	// below every slot of dst, so that reshard, which moves a node's
	// lowest slots first, moves it back.
	base := fmt.Sprintf("clustertest:move:%d:", time.Now().UnixNano())
	hot := keyOn(base, "hot", src, -1)
	s := slot.Of(keyspace.Key(base, hot, ""))
	if s >= dst.Slots[0][0] {
		t.Fatalf("slot %d of %s is not below the slots of %s (%v)", s, src.Addr, dst.Addr, dst.Slots)
	}
	var keys []string
	for i := 0; len(keys) < 8; i++ {
		if k := "hot" + strconv.Itoa(i); slot.Of(keyspace.Key(base, k, "")) == s {
			keys = append(keys, k)
		}
	}
	for i := range 6 {
		keys = append(keys, keyOn(base, "src"+strconv.Itoa(i), src, s))
	}
	for i := range 3 {
		keys = append(keys, keyOn(base, "dst"+strconv.Itoa(i), dst, -1))
	}
	t.Logf("slot %d moves between %s and %s; keys %q", s, src.Addr, dst.Addr, keys)

	t.Run("ByHand", func(t *testing.T) {
		underLoad(t, runner, base+"hand:", keys, func() error {
			return moveByHand(src, dst, ms[2:], s)
		})
		waitAgree(t, c)
		if got := owner(t, c, s); got.ID != dst.ID {
			t.Fatalf("slot %d is on %s after the move, want %s", s, got.Addr, dst.Addr)
		}
	})
	t.Run("Reshard", func(t *testing.T) {
		underLoad(t, runner, base+"reshard:", keys, func() error {
			if _, err := c.CLI("--cluster", "reshard", dst.Addr, "--cluster-from", dst.ID, "--cluster-to", src.ID,
				"--cluster-slots", "1", "--cluster-yes"); err != nil {
				return err
			}
			// redis-cli leaves the other masters to learn the slot's
			// owner by gossip, which between two masters of equal epochs
			// did not settle in 60 s once (Redis 6.0): every master is
			// told, as moveByHand tells them.
			for _, m := range append([]Master{src, dst}, ms[2:]...) {
				if _, err := redistest.Command(m.Addr, "CLUSTER", "SETSLOT", strconv.Itoa(s), "NODE", src.ID); err != nil {
					return err
				}
			}
			return nil
		})
		waitAgree(t, c)
		if got := owner(t, c, s); got.ID != src.ID {
			t.Fatalf("slot %d is on %s after the reshard, want %s", s, got.Addr, src.Addr)
		}
	})
}

// underLoad runs move while goroutines make decisions on keys, then checks
// that each key's count is what was allowed on it.
func underLoad(t *testing.T, runner core.ScriptRunner, prefix string, keys []string, move func() error) {
	ctx := context.Background()
	const limit = 1_000_000_000
	window := func(name string) *ratekit.Limiter {
		l, err := fixedwindow.New(runner, fixedwindow.Config{Limit: limit, Window: time.Hour, Prefix: prefix + name + ":"})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	single, batch, limA, limB := window("one"), window("many"), window("pa"), window("pb")
	policy, err := ratekit.NewPolicy(ratekit.PolicyConfig{Limits: []ratekit.Limit{{Name: "a", Limiter: limA}, {Name: "b", Limiter: limB}}})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []*load{
		{name: "AllowN", counts: []*ratekit.Limiter{single}, one: func(key string) (bool, error) {
			d, err := single.AllowN(ctx, key, 1)
			return d.Allowed, err
		}},
		{name: "AllowMany", counts: []*ratekit.Limiter{batch}, many: batch},
		{name: "Policy", counts: []*ratekit.Limiter{limA, limB}, one: func(key string) (bool, error) {
			d, err := policy.AllowN(ctx, key, 1)
			return d.Allowed, err
		}},
	}
	for _, k := range kinds {
		k.allowed = make(map[string]*atomic.Int64, len(keys))
		for _, key := range keys {
			k.allowed[key] = new(atomic.Int64)
		}
		// Every key exists before the move, on its first master.
		for _, key := range keys {
			if err := k.decide([]string{key}); err != nil {
				t.Fatalf("%s before the move: %v", k.name, err)
			}
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, k := range kinds {
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
				pick := make([]string, 0, 8)
				for {
					select {
					case <-stop:
						return
					default:
					}
					pick = pick[:0]
					for range 1 + rng.IntN(cap(pick)) {
						pick = append(pick, keys[rng.IntN(len(keys))])
					}
					if k.many == nil {
						pick = pick[:1]
					}
					if err := k.decide(pick); err != nil {
						t.Errorf("%s: %v", k.name, err)
						return
					}
				}
			}()
		}
	}
	time.Sleep(100 * time.Millisecond) // load before the move, not to time anything
	moveErr := move()
	time.Sleep(100 * time.Millisecond) // and after it
	close(stop)
	wg.Wait()
	if moveErr != nil {
		t.Fatal(moveErr)
	}

	for _, k := range kinds {
		var total int64
		for _, key := range keys {
			want := k.allowed[key].Load()
			total += want
			for _, l := range k.counts {
				d, err := l.Peek(ctx, key)
				if err != nil {
					t.Fatalf("%s: Peek(%q): %v", k.name, key, err)
				}
				if got := limit - d.Remaining; got != want {
					t.Errorf("%s: key %q counted %d requests, %d were allowed", k.name, key, got, want)
				}
			}
		}
		t.Logf("%s: %d requests allowed, %d refused before running", k.name, total, k.refused.Load())
	}
}

// load is one kind of decision, and what it allowed on each key.
type load struct {
	name    string
	one     func(key string) (allowed bool, err error) // nil for AllowMany
	many    *ratekit.Limiter                           // AllowMany on it, when one is nil
	counts  []*ratekit.Limiter                         // whose Peek reads the counts
	allowed map[string]*atomic.Int64
	refused atomic.Int64
}

// decide makes one decision per key, one by one or with AllowMany, and
// counts the allowed ones. It returns the first error that is not a
// refusal (refused calls ran nowhere and are only counted).
func (k *load) decide(keys []string) error {
	if k.one != nil {
		for _, key := range keys {
			ok, err := k.one(key)
			if err := k.check(err); err != nil {
				return err
			}
			if ok {
				k.allowed[key].Add(1)
			}
		}
		return nil
	}
	reqs := make([]core.Request, len(keys))
	for i, key := range keys {
		reqs[i] = core.Request{Key: key, N: 1}
	}
	for i, r := range k.many.AllowMany(context.Background(), reqs) {
		if err := k.check(r.Err); err != nil {
			return err
		}
		if r.Decision.Allowed {
			k.allowed[keys[i]].Add(1)
		}
	}
	return nil
}

// check counts err when the server refused the call before running it,
// and returns it otherwise.
func (k *load) check(err error) error {
	if err != nil && refused(err) {
		k.refused.Add(1)
		return nil
	}
	return err
}

// refused reports whether err is a cluster's refusal of a command, which
// it then did not run: TRYAGAIN (keys of a moving slot split between two
// nodes), or a redirect the client gave up following.
func refused(err error) bool {
	msg := err.Error()
	for _, s := range []string{"TRYAGAIN ", "MOVED ", "ASK "} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// moveByHand moves slot s from src to dst as redis-cli does, one step at a
// time: IMPORTING on dst, MIGRATING on src, its keys one MIGRATE each, in
// the order of their names, with a pause after each (so that calls meet
// keys split between the two), then NODE on dst, src and the other masters.
func moveByHand(src, dst Master, others []Master, s int) error {
	ss := strconv.Itoa(s)
	if _, err := redistest.Command(dst.Addr, "CLUSTER", "SETSLOT", ss, "IMPORTING", src.ID); err != nil {
		return err
	}
	if _, err := redistest.Command(src.Addr, "CLUSTER", "SETSLOT", ss, "MIGRATING", dst.ID); err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(dst.Addr)
	if err != nil {
		return err
	}
	for {
		keys, err := redistest.Strings(src.Addr, "CLUSTER", "GETKEYSINSLOT", ss, "1000")
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		// In order: a policy's first limit's keys all go before its
		// second's, so its calls meet split keys for a while.
		slices.Sort(keys)
		for _, k := range keys {
			if _, err := redistest.Command(src.Addr, "MIGRATE", host, port, "", "0", "10000", "KEYS", k); err != nil {
				return fmt.Errorf("MIGRATE %s: %w", k, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, m := range append([]Master{dst, src}, others...) {
		if _, err := redistest.Command(m.Addr, "CLUSTER", "SETSLOT", ss, "NODE", dst.ID); err != nil {
			return err
		}
	}
	return nil
}

// Master is a master of a cluster as CLUSTER NODES shows it.
type Master struct {
	ID, Addr string
	Slots    [][2]int // ranges, first to last included, in order
}

// Masters returns c's masters, ordered by their lowest slot, as a node of
// c sees them.
func Masters(t *testing.T, c *redistest.Cluster) []Master {
	t.Helper()
	var lastErr error
	for _, n := range c.Nodes() {
		ms, err := masters(n.Addr)
		if err != nil {
			lastErr = err
			continue
		}
		if len(ms) < 3 {
			t.Fatalf("%s sees %d masters with slots, want 3: %+v", n.Addr, len(ms), ms)
		}
		return ms
	}
	t.Fatalf("no node answered CLUSTER NODES: %v", lastErr)
	return nil
}

// masters reads the masters that serve slots from addr's CLUSTER NODES.
func masters(addr string) ([]Master, error) {
	out, err := redistest.Command(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var ms []Master
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
			continue
		}
		m := Master{ID: f[0], Addr: strings.SplitN(f[1], "@", 2)[0]}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot importing or migrating
			}
			lo, hi, _ := strings.Cut(r, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES slot %q: %w", r, err)
			}
			b := a
			if hi != "" {
				if b, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("CLUSTER NODES slot %q: %w", r, err)
				}
			}
			m.Slots = append(m.Slots, [2]int{a, b})
		}
		if len(m.Slots) > 0 {
			slices.SortFunc(m.Slots, func(x, y [2]int) int { return x[0] - y[0] })
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(x, y Master) int { return x.Slots[0][0] - y.Slots[0][0] })
	return ms, nil
}

// Owns reports whether m serves slot s.
func (m Master) Owns(s int) bool {
	for _, r := range m.Slots {
		if r[0] <= s && s <= r[1] {
			return true
		}
	}
	return false
}

// owner returns the master that serves slot s.
func owner(t *testing.T, c *redistest.Cluster, s int) Master {
	t.Helper()
	for _, m := range Masters(t, c) {
		if m.Owns(s) {
			return m
		}
	}
	t.Fatalf("no master serves slot %d", s)
	return Master{}
}

// keyOn returns a user key, name followed by digits, whose storage keys
// under prefix are served by m, in a slot other than not.
func keyOn(prefix, name string, m Master, not int) string {
	for i := 0; ; i++ {
		k := name + strconv.Itoa(i)
		if s := slot.Of(keyspace.Key(prefix, k, "")); m.Owns(s) && s != not {
			return k
		}
	}
}

// setSlot sends CLUSTER SETSLOT s state id to m.
func setSlot(t *testing.T, m Master, s int, state, id string) {
	t.Helper()
	if _, err := redistest.Command(m.Addr, "CLUSTER", "SETSLOT", strconv.Itoa(s), state, id); err != nil {
		t.Fatalf("SETSLOT %d %s on %s: %v", s, state, m.Addr, err)
	}
}

// waitAgree waits until every node of c reports the same masters and
// slots, none of them moving, as redis-cli --cluster requires before it
// moves a slot. Redis before 7.0 can leave one node's view of a moved slot
// stale for good, when another node's epoch outgrows the new owner's
// (redis/redis#3776, fixed by #12344); so once the masters agree and the
// others have not followed within 10 s, every master bumps its epoch
// (CLUSTER BUMPEPOCH, twice round), which makes its claims, the same on
// every master, the newest ones.
func waitAgree(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	start := time.Now()
	deadline, bumped := start.Add(60*time.Second), false
	var views []string
	for {
		views = views[:0]
		for _, n := range c.Nodes() {
			out, err := redistest.Command(n.Addr, "CLUSTER", "NODES")
			if err != nil {
				views = append(views, err.Error())
				continue
			}
			ms, err := masters(n.Addr)
			if err != nil || strings.Contains(out, "->-") || strings.Contains(out, "-<-") {
				views = append(views, fmt.Sprintf("%s: moving or unreadable: %v", n.Addr, err))
				continue
			}
			views = append(views, fmt.Sprint(ms))
		}
		if len(slices.Compact(slices.Clone(views))) == 1 {
			return
		}
		if !bumped && time.Since(start) > 10*time.Second && len(slices.Compact(slices.Clone(views[:len(c.Masters)]))) == 1 {
			t.Logf("the masters agree on the slots, another node does not after 10 s: every master bumps its epoch\n%s", strings.Join(views, "\n"))
			for range 2 {
				for _, m := range c.Masters {
					if _, err := redistest.Command(m.Addr, "CLUSTER", "BUMPEPOCH"); err != nil {
						t.Fatalf("CLUSTER BUMPEPOCH on %s: %v", m.Addr, err)
					}
				}
			}
			bumped = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nodes do not agree on the slots:\n%s", strings.Join(views, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
