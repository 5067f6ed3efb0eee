package faulttest

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/core"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/memory"
	redigostore "github.com/ratekit/ratekit/store/redigo"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/ratekit/ratekit/store/scriptproto"
	valkeystore "github.com/ratekit/ratekit/store/valkey"
)

// decideTimeout is the Timeout given to httplimit and grpclimit (and
// failsafe) by the tests whose subject is not a timeout: their defaults
// (100 ms) are shorter than a decision over a real Redis can take on a
// saturated machine, where the wrapper would answer its documented
// timeout outcome (fail open, or 503) instead of the decision the test is
// about. Tests of a timeout set their own (fault_test.go, outage_test.go).
const decideTimeout = 10 * time.Second

// adapter opens a fresh, independent client of one kind for a server, as
// a separate application process would; closed when t ends.
type adapter struct {
	name string
	open func(t *testing.T, addr string) core.ScriptRunner
}

var adapters = []adapter{
	{"goredis", func(t *testing.T, addr string) core.ScriptRunner {
		c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 32})
		t.Cleanup(func() { c.Close() })
		s, err := goredisstore.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"rueidis", func(t *testing.T, addr string) core.ScriptRunner {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		s, err := rueidisstore.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"redigo", func(t *testing.T, addr string) core.ScriptRunner {
		p := &redis.Pool{MaxIdle: 32, Dial: func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialConnectTimeout(10*time.Second))
		}}
		t.Cleanup(func() { p.Close() })
		s, err := redigostore.New(p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"valkey", func(t *testing.T, addr string) core.ScriptRunner {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		s, err := valkeystore.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	// The same store as scripts sent as EVALSHA, as it runs on a server
	// without Redis functions: every test of these clients runs in both
	// of a store's modes.
	{"goredis-evalsha", func(t *testing.T, addr string) core.ScriptRunner {
		c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true, PoolSize: 32})
		t.Cleanup(func() { c.Close() })
		s, err := goredisstore.New(c, scriptproto.WithoutFunctions())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// memoryAdapter shares one memory store between its "clients": the store
// is the server.
func memoryAdapter(t *testing.T) adapter {
	s, err := memory.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return adapter{"memory", func(*testing.T, string) core.ScriptRunner { return s }}
}

// TestEveryStoreHasAClient: each Redis store (a folder of store/ that is
// a module of its own, store/<name>) has a client named <name> in
// adapters (which also holds goredis-evalsha) and in outageClients, so that a new store is in the fault,
// contention and outage tests or fails here; the memory store
// (memoryAdapter) is in the root module.
func TestEveryStoreHasAClient(t *testing.T) {
	mods, err := filepath.Glob(filepath.Join("..", "..", "store", "*", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 {
		t.Fatal("no store/*/go.mod: the search is broken")
	}
	for _, m := range mods {
		name := filepath.Base(filepath.Dir(m))
		if !slices.ContainsFunc(adapters, func(a adapter) bool { return a.name == name }) {
			t.Errorf("store/%s has no client in adapters (clients_test.go): add one named %q", name, name)
		}
		if !slices.ContainsFunc(outageClients, func(c outageClient) bool { return c.name == name }) {
			t.Errorf("store/%s has no client in outageClients (outage_test.go): add one named %q", name, name)
		}
	}
	// One each, and goredis-evalsha, the goredis store without functions.
	if len(adapters) != len(mods)+1 || len(outageClients) != len(mods) {
		t.Errorf("%d adapters and %d outageClients for %d Redis stores: one each, and goredis-evalsha", len(adapters), len(outageClients), len(mods))
	}
}
