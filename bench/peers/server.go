package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"
)

// target is the Redis the harness measures: its own redis-server, or a
// server or cluster the user names (-redis, -cluster). On the user's, the
// harness first makes sure no key exists under prefix (claim), writes
// only keys that start with it, deletes them when it is done (UNLINK of
// what SCAN MATCH prefix* finds, never FLUSH), and leaves nothing else
// changed but the scripts and function libraries it loads.
type target struct {
	addrs    []string // host:port: the node, or the cluster's seed nodes
	cluster  bool
	username string
	password string
	db       int
	prefix   string       // every key the harness writes starts with it
	own      *redisServer // the harness's own server, nil for the user's
	rtt      time.Duration
	// claimed is set by claim once no key was found under prefix:
	// cleanup deletes nothing on a prefix not claimed.
	claimed bool
	// afterPass, when set (by tests), runs after each pass of cleanup.
	afterPass func(pass int)
}

// newTarget returns the user's target from -redis (a redis:// URL) or
// -cluster (comma-separated host:port or redis:// URLs), or nil when both
// are empty.
func newTarget(url, cluster, prefix string) (*target, error) {
	if url != "" && cluster != "" {
		return nil, fmt.Errorf("-redis and -cluster: give one")
	}
	if url == "" && cluster == "" {
		return nil, nil
	}
	if prefix == "" {
		var b [4]byte
		rand.Read(b[:])
		prefix = "ratekit-bench:" + hex.EncodeToString(b[:]) + ":"
	}
	// Braces would make a hash tag of part of the prefix; the glob
	// characters, a backslash included (SCAN MATCH reads it as an escape),
	// would make cleanup's pattern match other keys than the prefix's, or
	// miss the harness's own.
	if strings.ContainsAny(prefix, `{}*?[]\`) {
		return nil, fmt.Errorf(`-prefix %q: no braces, glob characters or backslashes ({}*?[]\)`, prefix)
	}
	t := &target{prefix: prefix, cluster: cluster != ""}
	list := []string{url}
	if t.cluster {
		list = strings.Split(cluster, ",")
	}
	for _, u := range list {
		u = strings.TrimSpace(u)
		if !strings.Contains(u, "://") {
			u = "redis://" + u
		}
		o, err := goredis.ParseURL(u)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", u, err)
		}
		if o.TLSConfig != nil {
			return nil, fmt.Errorf("%q: TLS (rediss://) is not supported by the harness", u)
		}
		if t.cluster && o.DB != 0 {
			return nil, fmt.Errorf("%q: a cluster has no databases", u)
		}
		t.addrs = append(t.addrs, o.Addr)
		t.username, t.password, t.db = o.Username, o.Password, o.DB
	}
	return t, nil
}

// ownTarget is the harness's own redis-server.
func ownTarget(s *redisServer) *target {
	return &target{addrs: []string{s.addr}, own: s}
}

func (t *target) String() string {
	where := "the harness's own redis-server"
	if t.own == nil {
		kind := "server"
		if t.cluster {
			kind = "cluster"
		}
		where = fmt.Sprintf("the %s at %s (keys under %q)", kind, strings.Join(t.addrs, ","), t.prefix)
	}
	return fmt.Sprintf("%s, round trip %v (median PING)", where, t.rtt.Round(time.Microsecond))
}

// goredis returns a go-redis client: a *goredis.ClusterClient on a
// cluster, a *goredis.Client otherwise.
func (t *target) goredis(retries int) goredis.UniversalClient {
	if t.cluster {
		return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: t.addrs, Username: t.username, Password: t.password, MaxRetries: retries, PoolSize: 256})
	}
	return goredis.NewClient(&goredis.Options{Addr: t.addrs[0], Username: t.username, Password: t.password, DB: t.db, MaxRetries: retries, PoolSize: 256})
}

func (t *target) rueidis() (rueidis.Client, error) {
	return rueidis.NewClient(rueidis.ClientOption{InitAddress: t.addrs, Username: t.username, Password: t.password, SelectDB: t.db, DisableCache: true})
}

func (t *target) valkey() (valkey.Client, error) {
	return valkey.NewClient(valkey.ClientOption{InitAddress: t.addrs, Username: t.username, Password: t.password, SelectDB: t.db, DisableCache: true})
}

func (t *target) redigo() (*redis.Pool, error) {
	if t.cluster {
		return nil, errNoCluster
	}
	dial := func() (redis.Conn, error) {
		return redis.Dial("tcp", t.addrs[0], redis.DialUsername(t.username), redis.DialPassword(t.password), redis.DialDatabase(t.db))
	}
	return &redis.Pool{MaxIdle: 256, MaxActive: 256, Wait: true, Dial: dial}, nil
}

var errNoCluster = fmt.Errorf("no cluster client")

// measureRTT sets t.rtt: the median of 200 PINGs from one connection.
func (t *target) measureRTT(ctx context.Context) error {
	c := t.goredis(0)
	defer c.Close()
	var d []time.Duration
	for i := 0; i < 200; i++ {
		start := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("PING %s: %w", strings.Join(t.addrs, ","), err)
		}
		d = append(d, time.Since(start))
	}
	slices.Sort(d)
	t.rtt = d[len(d)/2]
	return nil
}

// claim makes sure that no key exists under the prefix on any node of the
// user's target, before the harness writes anything there: cleanup
// deletes every key under it, so a key found now would be the user's.
// Only a claimed prefix is cleaned up.
func (t *target) claim(ctx context.Context) error {
	if t.own != nil {
		return nil
	}
	var found []string
	err := t.eachNode(ctx, func(ctx context.Context, c goredis.UniversalClient) error {
		it := c.Scan(ctx, 0, t.prefix+"*", 1000).Iterator()
		for len(found) < 3 && it.Next(ctx) {
			found = append(found, it.Val())
		}
		return it.Err()
	})
	if err != nil {
		return fmt.Errorf("looking for keys under -prefix %q on %s: %w", t.prefix, strings.Join(t.addrs, ","), err)
	}
	if len(found) > 0 {
		return fmt.Errorf("-prefix %q: %s already holds keys under it (%q): the harness deletes every key under its prefix when it is done, so it writes nothing under one in use; name an unused -prefix, or leave it out for a random one", t.prefix, strings.Join(t.addrs, ","), found)
	}
	// Two runs given one prefix at once both found it empty: one key,
	// set only if absent, says which of them holds it (cleanup deletes it
	// with the rest; it expires in a day should the run be killed).
	c := t.goredis(0)
	defer c.Close()
	held, err := c.SetNX(ctx, t.prefix+claimKey, time.Now().UTC().Format(time.RFC3339), 24*time.Hour).Result()
	if err != nil {
		return fmt.Errorf("claiming -prefix %q on %s: %w", t.prefix, strings.Join(t.addrs, ","), err)
	}
	if !held {
		return fmt.Errorf("-prefix %q: another run holds it on %s; name an unused -prefix, or leave it out for a random one", t.prefix, strings.Join(t.addrs, ","))
	}
	t.claimed = true
	return nil
}

// claimKey, under the prefix, marks it held by a run (claim).
const claimKey = "claimed"

// eachNode runs f on each master of a cluster, or on the one server, one
// node at a time (go-redis calls ForEachMaster's function on every master
// at once; f need not guard what it shares).
func (t *target) eachNode(ctx context.Context, f func(context.Context, goredis.UniversalClient) error) error {
	c := t.goredis(0)
	defer c.Close()
	if cc, ok := c.(*goredis.ClusterClient); ok {
		var mu sync.Mutex
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return f(ctx, m)
		})
	}
	return f(ctx, c)
}

// cleanupPasses bounds cleanup's passes: one that deletes, then one after
// a pause that finds nothing.
const cleanupPasses = 5

// cleanup deletes every key under a claimed prefix on the user's target,
// node by node on a cluster, and returns how many. It is called once
// every client of the harness has stopped; a write one of them sent just
// before it stopped may still be on its way, so cleanup passes again
// after a pause (ten round trips, at least 200 ms) until a pass finds
// nothing.
func (t *target) cleanup(ctx context.Context) (int, error) {
	if t.own != nil || !t.claimed {
		return 0, nil
	}
	total := 0
	for pass := 0; ; pass++ {
		n, err := t.unlinkPrefix(ctx)
		total += n
		if err != nil {
			return total, err
		}
		if t.afterPass != nil {
			t.afterPass(pass)
		}
		if pass > 0 && n == 0 {
			return total, nil
		}
		if pass == cleanupPasses-1 {
			return total, fmt.Errorf("keys still appear under the prefix after %d passes: something else writes there", cleanupPasses)
		}
		time.Sleep(max(200*time.Millisecond, 10*t.rtt))
	}
}

// unlinkPrefix makes one pass of cleanup: it deletes what SCAN MATCH
// finds under the prefix on every node and returns how many.
func (t *target) unlinkPrefix(ctx context.Context) (int, error) {
	n := 0
	err := t.eachNode(ctx, func(ctx context.Context, c goredis.UniversalClient) error {
		it := c.Scan(ctx, 0, t.prefix+"*", 1000).Iterator()
		var batch []string
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			// One key per command: keys of different slots cannot share
			// one on a cluster.
			p := c.Pipeline()
			for _, k := range batch {
				p.Unlink(ctx, k)
			}
			_, err := p.Exec(ctx)
			n += len(batch)
			batch = batch[:0]
			return err
		}
		for it.Next(ctx) {
			if !strings.HasPrefix(it.Val(), t.prefix) {
				continue // never: MATCH filters; checked all the same
			}
			batch = append(batch, it.Val())
			if len(batch) == 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		return flush()
	})
	return n, err
}

// benchmarkArgs returns redis-benchmark's connection flags for the target,
// and a key with a hash tag that puts it on any node ({tag} is
// redis-benchmark's, in cluster mode).
func (t *target) benchmarkArgs() (args []string, tag string) {
	host, port, _ := net.SplitHostPort(t.addrs[0])
	args = []string{"-h", host, "-p", port}
	if t.password != "" {
		args = append(args, "-a", t.password)
	}
	if t.username != "" {
		args = append(args, "--user", t.username)
	}
	if t.db != 0 {
		args = append(args, "--dbnum", fmt.Sprint(t.db))
	}
	if t.cluster {
		return append(args, "--cluster"), "{tag}:__rand_int__"
	}
	return args, "{__rand_int__}"
}

// prefixed is a go-redis client for redis_rate whose scripts' keys get
// the target's prefix: redis_rate writes "rate:" + key and has no prefix
// of its own.
type prefixed struct {
	goredis.UniversalClient
	prefix string
}

func (p prefixed) keys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = p.prefix + k
	}
	return out
}

func (p prefixed) Eval(ctx context.Context, script string, keys []string, args ...any) *goredis.Cmd {
	return p.UniversalClient.Eval(ctx, script, p.keys(keys), args...)
}

func (p prefixed) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *goredis.Cmd {
	return p.UniversalClient.EvalSha(ctx, sha, p.keys(keys), args...)
}

func (p prefixed) EvalRO(ctx context.Context, script string, keys []string, args ...any) *goredis.Cmd {
	return p.UniversalClient.EvalRO(ctx, script, p.keys(keys), args...)
}

func (p prefixed) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *goredis.Cmd {
	return p.UniversalClient.EvalShaRO(ctx, sha, p.keys(keys), args...)
}

func (p prefixed) Del(ctx context.Context, keys ...string) *goredis.IntCmd {
	return p.UniversalClient.Del(ctx, p.keys(keys)...)
}
