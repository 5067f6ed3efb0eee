package miniredistest

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/conformance"
	"github.com/ratekit/ratekit/core"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	redigostore "github.com/ratekit/ratekit/store/redigo"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/ratekit/ratekit/store/scriptproto"
	valkeystore "github.com/ratekit/ratekit/store/valkey"
	"github.com/ratekit/ratekit/testkit/adaptertest"
)

// must(t)(New(...)) returns the store New built, failing t on its error.
func must(t *testing.T) func(*scriptproto.Runner, error) *scriptproto.Runner {
	return func(r *scriptproto.Runner, err error) *scriptproto.Runner {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// goredisClient returns a go-redis client for addr, closed when t ends.
func goredisClient(t *testing.T, addr string) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGoredis(t *testing.T) {
	adaptertest.Miniredis(t, miniredis.RunT(t).Addr(), func(t *testing.T, addr string, plainRO bool) core.ScriptRunner {
		if plainRO {
			return must(t)(goredisstore.New(goredisClient(t, addr), scriptproto.WithoutReadOnlyCommands()))
		}
		return must(t)(goredisstore.New(goredisClient(t, addr)))
	})
}

// The conformance suite in server-time mode: TIME inside the scripts and
// the TTLs follow the suite's fake clock. miniredis' EVAL_RO refuses TIME,
// so read-only scripts go through plain EVALSHA here.
func TestGoredisConformanceServerTime(t *testing.T) {
	m := miniredis.RunT(t)
	m.ClockTTL(true)
	r := must(t)(goredisstore.New(goredisClient(t, m.Addr()), scriptproto.WithoutReadOnlyCommands()))
	conformance.Run(t, conformance.Harness{Runner: r, SetTime: m.SetTime, ForwardOnlyTTL: true})
}

// DisableCache: miniredis has no CLIENT TRACKING. ForceSingleClient:
// miniredis answers CLUSTER SHARDS.
func TestRueidis(t *testing.T) {
	adaptertest.Miniredis(t, miniredis.RunT(t).Addr(), func(t *testing.T, addr string, plainRO bool) core.ScriptRunner {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		if plainRO {
			return must(t)(rueidisstore.New(c, scriptproto.WithoutReadOnlyCommands()))
		}
		return must(t)(rueidisstore.New(c))
	})
}

func TestValkey(t *testing.T) {
	adaptertest.Miniredis(t, miniredis.RunT(t).Addr(), func(t *testing.T, addr string, plainRO bool) core.ScriptRunner {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		if plainRO {
			return must(t)(valkeystore.New(c, scriptproto.WithoutReadOnlyCommands()))
		}
		return must(t)(valkeystore.New(c))
	})
}

func TestRedigo(t *testing.T) {
	adaptertest.Miniredis(t, miniredis.RunT(t).Addr(), func(t *testing.T, addr string, plainRO bool) core.ScriptRunner {
		p := &redigo.Pool{MaxIdle: 8, Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", addr) }}
		t.Cleanup(func() { p.Close() })
		if plainRO {
			return must(t)(redigostore.New(p, scriptproto.WithoutReadOnlyCommands()))
		}
		return must(t)(redigostore.New(p))
	})
}
