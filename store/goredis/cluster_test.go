package goredisstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
	"github.com/ratekit/ratekit/testkit/clustertest"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// TestCluster runs the conformance suite on a real local Redis Cluster
// through *redis.ClusterClient, 64 goroutines pipelining, then the
// cluster checks (which end with a failover).
func TestCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, MaxRedirects: 8})
	t.Cleanup(func() { rdb.Close() })
	r := newStore(t, rdb)
	t.Run("OneAddress", func(t *testing.T) {
		one := redis.NewClient(&redis.Options{Addr: c.Masters[0].Addr, MaxRetries: -1})
		t.Cleanup(func() { one.Close() })
		clustertest.OneAddress(t, c, newStore(t, one))
	})
	t.Run("Conformance", func(t *testing.T) { conformance.Run(t, conformance.Harness{Runner: r}) })
	t.Run("Pipelining", func(t *testing.T) {
		// go-redis splits each pipeline by node.
		own := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, MaxRedirects: 8, PoolSize: 64})
		t.Cleanup(func() { own.Close() })
		pipelineExact(t, own)
	})
	// With the options the package doc asks for, and a read timeout no
	// call reaches (a call that times out may have run).
	docs := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { docs.Close() })
	t.Run("HalfMovedSlot", func(t *testing.T) { clustertest.HalfMovedSlot(t, c, newStore(t, docs)) })
	t.Run("Migration", func(t *testing.T) { clustertest.Migration(t, c, newStore(t, docs)) })
	t.Run("LostReplySentOnce", func(t *testing.T) { lostReplySentOnce(t, c) })
	t.Run("FunctionMissingOnOneNode", func(t *testing.T) { functionMissingOnOneNode(t, c, newStore(t, docs)) })
	clustertest.Run(t, c, r)
}

// incr counts its runs on its key.
var incr = core.NewScript("incr", `return {redis.call('INCR', KEYS[1])}`,
	func(core.Tx, []string, []int64, []int64) ([]int64, error) { return nil, errors.New("no twin") }, false)

// dropConn is a connection to a node that loses the reply to the first
// write holding mark: it waits for the reply (the commands ran) and then
// fails as a broken connection does.
type dropConn struct {
	net.Conn
	mark   string
	once   *sync.Once
	doomed bool
}

func (c *dropConn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.mark) {
		c.once.Do(func() { c.doomed = true })
	}
	return c.Conn.Write(p)
}

func (c *dropConn) Read(p []byte) (int, error) {
	if !c.doomed {
		return c.Conn.Read(p)
	}
	_, _ = c.Conn.Read(p) // the server ran what it read with the write
	c.Conn.Close()
	return 0, io.ErrUnexpectedEOF
}

// lostReplySentOnce checks that a script whose reply is lost is not sent
// again: a ClusterClient retries a command after a network error up to
// MaxRedirects times, and a pipeline's whole batch, whatever MaxRetries
// says.
func lostReplySentOnce(t *testing.T, c *redistest.Cluster) {
	ctx := context.Background()
	prefix := fmt.Sprintf("lost:%d:", time.Now().UnixNano())
	for _, n := range c.Nodes() { // so that no call meets NOSCRIPT or a missing function
		if _, err := redistest.Command(n.Addr, "SCRIPT", "LOAD", incr.Lua()); err != nil {
			t.Fatal(err)
		}
	}
	loadEverywhere(t, c, incr)
	store := func(t *testing.T, mark string) *scriptproto.Runner {
		var once sync.Once
		var d net.Dialer
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRetries: -1, ReadTimeout: time.Minute,
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conn, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &dropConn{Conn: conn, mark: mark, once: &once}, nil
			}})
		t.Cleanup(func() { rdb.Close() })
		var opts []scriptproto.Option
		if !redistest.ServerVersion(t).AtLeast(7, 0) {
			// The first write holding mark must be the script's: not an
			// FCALL the server refuses.
			opts = append(opts, scriptproto.WithoutFunctions())
		}
		return newStore(t, rdb, opts...)
	}
	runs := func(t *testing.T, key string) string {
		t.Helper()
		for _, n := range c.Nodes() { // the master that has it answers
			if v, err := redistest.Command(n.Addr, "GET", key); err == nil {
				return v
			}
		}
		t.Fatalf("no node answered GET %s", key)
		return ""
	}
	t.Run("RunScript", func(t *testing.T) {
		key := prefix + "{one}"
		if _, err := store(t, key).RunScript(ctx, incr, []string{key}, nil, nil); err == nil {
			t.Fatal("a call whose reply was lost succeeded")
		}
		if n := runs(t, key); n != "1" {
			t.Errorf("the script ran %s times, want 1", n)
		}
	})
	t.Run("RunScripts", func(t *testing.T) {
		calls := []core.ScriptCall{
			{Script: incr, Keys: []string{prefix + "{many}0"}},
			{Script: incr, Keys: []string{prefix + "{many}1"}},
		}
		for i, res := range store(t, prefix+"{many}").RunScripts(ctx, calls) {
			if res.Err == nil {
				t.Errorf("call %d, whose reply was lost, succeeded", i)
			}
		}
		for _, call := range calls {
			if n := runs(t, call.Keys[0]); n != "1" {
				t.Errorf("the script on %s ran %s times, want 1", call.Keys[0], n)
			}
		}
	})
}

// loadEverywhere loads s's function library on every master of c, where
// the server has functions.
func loadEverywhere(t *testing.T, c *redistest.Cluster, s *core.Script) {
	t.Helper()
	if !redistest.ServerVersion(t).AtLeast(7, 0) {
		return
	}
	for _, m := range c.Masters {
		if _, err := redistest.Command(m.Addr, "FUNCTION", "LOAD", scriptproto.Library(s)); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
}

// functionMissingOnOneNode: one master loses every function (FUNCTION
// FLUSH; as a node given slots it never had, or restarted without
// persistence, would lack them) while the others keep them. Calls on
// its keys go as EVALSHA and load the library again; every call counts
// once, on every master.
func functionMissingOnOneNode(t *testing.T, c *redistest.Cluster, store *scriptproto.Runner) {
	if !redistest.ServerVersion(t).AtLeast(7, 0) {
		t.Skip("the server has no functions (Redis before 7.0)")
	}
	ctx := context.Background()
	prefix := fmt.Sprintf("fnmiss:%d:", time.Now().UnixNano())
	keys := make([]string, 32) // in slots of every master
	for i := range keys {
		keys[i] = fmt.Sprintf("%s{k%d}", prefix, i)
	}
	loadEverywhere(t, c, incr)
	calls := make([]core.ScriptCall, len(keys))
	for i, k := range keys {
		calls[i] = core.ScriptCall{Script: incr, Keys: []string{k}}
	}
	want := int64(0) // each key's count: every call counts once
	for round := range 3 {
		if _, err := redistest.Command(c.Masters[round%len(c.Masters)].Addr, "FUNCTION", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		want++
		for _, k := range keys {
			got, err := store.RunScript(ctx, incr, []string{k}, nil, nil)
			if err != nil || len(got) != 1 || got[0] != want {
				t.Fatalf("round %d, %s: %v, %v; want [%d]", round, k, got, err, want)
			}
		}
		if _, err := redistest.Command(c.Masters[(round+1)%len(c.Masters)].Addr, "FUNCTION", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		want++
		for i, res := range store.RunScripts(ctx, calls) {
			if res.Err != nil || len(res.Reply) != 1 || res.Reply[0] != want {
				t.Fatalf("round %d, batch call %d on %s: %v, %v; want [%d]", round, i, keys[i], res.Reply, res.Err, want)
			}
		}
	}
}
