package main

import (
	"fmt"
	"strings"
)

// targets states each of the targets with its measured value.
func (r *results) targets(o options) string {
	var b strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	g := o.goroutines[len(o.goroutines)-1]
	tb := func(s string) caseKey { return caseKey{s, "tokenbucket", "open", g} }
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	w("## Targets (at %d goroutines unless said)\n\n| target | measured | |\n|---|---|---|\n", g)
	if r.has(tb("ratekit/rueidis")) && len(r.ceilings["tokenbucket"]) > 0 {
		v := r.ceilingRatio(tb("ratekit/rueidis"), "tokenbucket")
		w("| rueidis token bucket >= 0.8x its script's -P16 ceiling | %.2fx | %s |\n", v, mark(v >= 0.8))
	}
	if r.has(tb("ratekit/rueidis")) && r.has(tb("redis_rate")) {
		v := r.ratio(tb("ratekit/rueidis"), tb("redis_rate"))
		w("| rueidis token bucket >= 3x redis_rate | %.2fx | %s |\n", v, mark(v >= 3))
	}
	for _, st := range []string{"goredis", "goredis-auto"} {
		if r.has(tb("ratekit/"+st)) && r.has(tb("redis_rate")) {
			v := r.ratio(tb("ratekit/"+st), tb("redis_rate"))
			w("| %s token bucket >= 2.5x redis_rate | %.2fx | %s |\n", st, v, mark(v >= 2.5))
		}
	}
	if pk := (caseKey{"ratekit/rueidis", "tokenbucket", "policy2", g}); r.has(pk) && r.has(tb("ratekit/rueidis")) {
		v := r.ratio(pk, tb("ratekit/rueidis"))
		w("| rueidis two-limit policy (token bucket + fixed window, one script) >= 0.8x a single limit | %.2fx | %s |\n", v, mark(v >= 0.8))
	}
	r.coalesceTargets(o, w, mark)
	allocs := func(k caseKey) float64 {
		return median(field(r.samples[k], func(s sample) float64 { return s.allocs }))
	}
	if r.has(tb("ratekit/rueidis")) {
		v := allocs(tb("ratekit/rueidis"))
		w("| rueidis allocations per decision <= 4 | %.2f | %s |\n", v, mark(v <= 4))
	}
	for _, st := range []string{"goredis", "goredis-auto"} {
		if r.has(tb("ratekit/" + st)) {
			v := allocs(tb("ratekit/" + st))
			w("| %s allocations per decision <= 8 | %.2f | %s |\n", st, v, mark(v <= 8))
		}
	}
	if len(r.ceilings["seed tokenbucket"]) > 0 {
		names := []string{policyCeiling}
		for _, a := range algos {
			names = append(names, a.name)
		}
		for _, n := range names {
			// As the stores run it: FCALL where the server has functions.
			cs, way := r.ceilings[n+fcallSuffix], "FCALL"
			if len(cs) == 0 {
				cs, way = r.ceilings[n], "EVALSHA"
			}
			// Issue 33's goals: 1.0x, the sliding log 0.7x (a sorted set),
			// a policy of two limits 0.6x (two steps, two keys).
			goal := 1.0
			switch n {
			case "slidinglog":
				goal = 0.7
			case policyCeiling:
				goal = 0.6
			}
			if len(cs) > 0 {
				v := guideRatio(cs)
				w("| %s script's -P16 ceiling (%s) >= %.1fx the seed token bucket's (EVALSHA) | %.2fx | %s |\n", n, way, goal, v, mark(v >= goal))
			}
		}
	}
	if len(r.ceilings["tokenbucket"]) > 0 {
		for _, st := range storeNames {
			k := caseKey{"ratekit/" + st, "tokenbucket", "batch", 1}
			if st != "memory" && r.has(k) {
				v := r.ceilingRatio(k, "tokenbucket")
				w("| %s AllowMany of %d keys, 1 goroutine, >= 1.5x the token bucket's -P16 ceiling (issue 14) | %.2fx | %s |\n", st, batchSize, v, mark(v >= 1.5))
			}
		}
	}
	// Issue 33, item 3 (issue 14's item 4 asked 1.5x x/time/rate): every
	// algorithm on the memory store at least as fast as sethvargo's
	// memorystore and 1.2x x/time/rate per key, at 1 goroutine and at the
	// most, with no allocation (the sliding log's allowed path included);
	// a two-limit policy at 0.5x a single limit, and a request's Params
	// within 5% of the limiter's own.
	for _, gg := range []int{1, g} {
		single := caseKey{"ratekit/memory", "tokenbucket", "open", gg}
		if pk := (caseKey{"ratekit/memory", "tokenbucket", "policy2", gg}); r.has(pk) && r.has(single) {
			v := r.ratio(pk, single)
			w("| memory two-limit policy >= 0.5x a single limit, %d goroutines | %.2fx | %s |\n", gg, v, mark(v >= 0.5))
		}
		if pk := (caseKey{"ratekit/memory", "tokenbucket", "params", gg}); r.has(pk) && r.has(single) {
			v := r.ratio(pk, single)
			w("| memory token bucket with Params >= 0.95x its own limits, %d goroutines | %.2fx | %s |\n", gg, v, mark(v >= 0.95))
		}
	}
	for _, a := range algos {
		for _, gg := range []int{1, g} {
			mk := caseKey{"ratekit/memory", a.name, "open", gg}
			if !r.has(mk) {
				continue
			}
			for _, p := range []struct {
				name string
				want float64
			}{{"x/time/rate", 1.2}, {"sethvargo", 1.0}} {
				if pk := (caseKey{p.name, "tokenbucket", "open", gg}); r.has(pk) {
					v := r.ratio(mk, pk)
					w("| memory %s >= %.1fx %s, %d goroutines | %.2fx | %s |\n", a.name, p.want, p.name, gg, v, mark(v >= p.want))
				}
			}
			w("| memory %s 0 allocs per decision, %d goroutines | %.2f | %s |\n", a.name, gg, allocs(mk), mark(allocs(mk) < 0.05))
		}
	}
	w("\n%s", why)
	return b.String()
}

// why explains the misses this machine shows, from profiles taken while
// building the harness (go test -cpuprofile on the store benchmarks, and
// redis-benchmark on the scripts). It is the same text every run; the
// table above says which targets this run missed and by how much.
const why = `## Why targets are missed here

* **Redis adapters against the ceiling.** The ceiling is redis-benchmark, a
  C client pipelining 16 commands deep from 50 connections, with almost no
  CPU of its own. The Go clients here share the machine's 2 cores with
  redis-server: every decision's client work (building the command, the
  goroutine hand-offs of auto pipelining, parsing the reply) is CPU taken
  from the single Redis thread. rueidis pipelines concurrent calls, and so
  does the go-redis store (a call that finds four in flight queues, and the
  queue goes as one pipeline); redigo, and go-redis Pipelining(false), send
  one command per pooled connection and wait for each reply.
* **AllowMany from one goroutine against the ceiling.** The ceiling is
  one decision per script call; a batch on one server makes up to 64
  decisions per call (100 random keys: two calls), so the call's parsing,
  script lookup, TIME and reply are paid once per 64 decisions: on the
  server a key of a batch costs half a call of its own (cachegrind: about
  37 000 instructions against 78 000), and redis-benchmark from one
  connection, one 100-key call at a time, made 2.1-2.2x the ceiling. One
  goroutine of a Go client pays more per round trip: while it builds a
  batch, and while its client's goroutines read the reply and wake it,
  the server is idle (it ran at about two thirds of a core). A bare
  rueidis DoMulti of the same two calls made about 1.5-1.6x the ceiling,
  ratekit's AllowMany 0.93x of that (the keys' checks and escaping, the
  decisions built). Splitting the batch into parts sent concurrently, so
  that the server starts on the first while the rest is built, made it
  slower here (0.86-0.96x): the extra goroutines and round trips take the
  same two cores. On a cluster only keys sharing a slot share a call, so
  random keys gain the round trip and not the per-call cost.
* **Coalescing at 1 goroutine against the plain limiter.** One goroutine
  never finds a call of its own in flight, so every call goes alone,
  through the plain limiter's code path, plus one mutex and a counter:
  store/rueidis alternating the two 25 times for 150 ms in one process
  read 0.99-1.01x, before and after concurrent calls had turned on the
  client's pipelining. Here each case is measured beside its plain
  limiter, forth and back four times, but at about 13 000 calls per second a
  round's figure moves by tens of percent: full runs have read
  0.87-1.30x on rueidis and 0.89-1.11x on the other clients, targeted
  runs 0.99-1.01x.
* **Ratios to redis_rate.** Both are bounded by the same single-threaded
  server and the same 2 cores; redis_rate's GCRA script is cheap, so 3x or
  2.5x its rate would need more than the server's ceiling for ratekit's
  script. The ratios show the pipelining gain, not a slower script.
  redis_rate runs at a million per second per key here: at 2^30 per
  second, as the other limiters run, its floating-point time lost each
  request's increment and it wrote no state at all, which made it look
  faster than it is (runs before commit eb0cf5d measured that).
* **A two-limit policy against one limit.** The policy reads and writes
  two keys (each limit keeps its state under its own limiter's prefix)
  and runs two steps, so its script costs the server about 1.65-1.75x a
  single limit's: cachegrind on redis-server counts 129 000 instructions
  per call for the token bucket and fixed window policy against 78 000
  for the token bucket alone (both with TIME), of which the second key's
  GET and SET with its TTL are 16 000. Where the server is the bottleneck (rueidis at 64 and
  256 goroutines) the policy then makes about 0.55-0.7x a single limit's
  decisions per second; 0.8x would need the second limit to add at most
  a quarter of a call. Keeping both limits' state in one key would save
  one GET and SET but parse and format twice the integers: estimated
  0.67x, and the limits could no longer be read alone.
* **Allocations.** On rueidis and valkey-go one allocation of ratekit's
  holds a call's key (copied, so the limiter can lend a reused buffer) and
  its arguments as strings; the rest are the client's own (its command and
  its reply): 3 per decision in go test -bench TokenBucket/serial, about 2
  here, where auto pipelining shares work between concurrent calls. On
  go-redis the adapter builds each command, keys copied, in one
  allocation (pointers to strings and integers, which go-redis writes as
  their values, instead of an interface per value): a memory profile of
  go test -bench TokenBucket/serial then shows 10 per decision, most of them
  go-redis' own: its Cmd, its reply slice with boxed integers, and about
  three in its pool's health check of every connection it hands out
  (net.RawConn). Through the AutoPipeliner the same command costs more
  (about 18-21 in go test -bench TokenBucketAutoPipeline): its batching
  machinery allocates per command.
* **Script cost against the guide's token bucket.** ratekit's scripts do
  more than the guide's in each call: the TTL goes in the same SET (the
  guide sets none: PX alone costs the server about 6 000 instructions of
  a call), the stored state is checked, and in the default server-time
  mode the script also calls TIME (the guide takes now from the client).
  cachegrind on redis-server: the token bucket takes about 68 000
  instructions per call with a client clock, 78 000 with TIME, the
  guide's script 58 000 (docs/design.md, "What a script costs").
* **go-redis against a bare redis.NewScript(guide's script).Run.** Sent
  one by one, a call costs the client more CPU than the server here
  (store/goredis BenchmarkAgainstBareScript: about 16-22 µs of client CPU
  per call at 64-256 goroutines, mostly the write and read system calls
  and goroutine wake-ups, the same for the bare call and for the store
  Pipelining(false), which made 0.7-0.9x the bare call). The store
  pipelines concurrent calls, which brings that to 5-8 µs and puts it
  ahead of the bare call at 64 and 256 goroutines (1.4x and 1.7x in that
  benchmark), where the server's time per call bounds it. At 1 goroutine
  there is nothing to share: what is left is ratekit's script, which
  costs the server more than the guide's per call (INFO commandstats;
  cachegrind: 78 500 instructions with TIME against 57 800): a TTL on
  every write alone costs the guide's script 1.2x (0.90x the throughput),
  TIME about 1.1x, and the rest is the state's checked parse and exact
  formatting.
* **The memory store against the in-process peers.** A limiter on the
  memory store decides one key in process: the engine locks the key's
  shard through the store's core.LocalStore (which finds the first
  limit's key in the same call) and runs the algorithm's step and commit
  (the same Go the composed script's twin runs) on the shard's Tx, with
  no script call, no pooled frame and no key built for a known key (it
  is hashed and compared by its parts). A token bucket decision is about
  1 450 instructions and 3.0 last-level misses (callgrind and
  cachegrind with a 1 MB last level, 100 000 decisions on 10 000 known
  keys); sethvargo's memorystore about 350 and 1.6, x/time/rate per key
  in a sync.Map about 780 and 8.5: one mutable struct per key, no TTL,
  no checks, no stored state to validate, an answer of a bool. Where
  ratekit's go (docs/design.md, "What a decision costs in process"): a
  sixth in Allow, the call's checks and the Decision, a third in Lock
  (the user key's hash, the shard's mutex, the clock, finding the key),
  a quarter in the step and its call, a sixth in the commit. Reaching
  sethvargo would need a decision of about a third of that: not the
  engine's generic step, Tx and Decision, but code per algorithm, a
  second copy of each algorithm beside its Lua and Go twin. Even that
  would not do: a token bucket written by hand on the store's own table
  (BenchmarkTableFloor: the hash, the shard lock, the probe and compare,
  the clock, one write; no engine, no checks) took 108 ns serial and 81
  ns from two goroutines in go test, where sethvargo took about 95 (both
  peers storing a copy of each key, as this harness has them since its
  warm-up brings copies: with the very strings they stored, they compare
  keys by pointer). From two goroutines each decision also hands cache
  lines between the cores: the line of the key's shard that holds its
  lock, and the entry's written line (its expiry and value). A policy of
  two limits pays two steps, two commits, two entries' misses and the
  allocation of its Limits (the per-limit detail): about 2.7x a single
  limit's instructions.
* **The sliding log's allocations.** Its allowed decisions build the next
  log in memory the store lends and copy it into the key's array, which
  is kept when the log shrinks: what this table counts is that array
  growing (by half again) past the key's largest log yet, in a case of
  a few hundred milliseconds whose keys' logs start empty. go test
  -bench InProcess, whose keys are warm, counts 0 allocations per
  decision.
`
