package faulttest

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/store/memory"
)

// build makes the algorithm kind (modulo the number of algorithms) from
// raw numbers, as a careless caller might (see limitParams).
func build(r core.ScriptRunner, kind uint8, a, b int64, d time.Duration, prefix string) (core.Limiter, error) {
	alg := algorithms.All[int(kind)%len(algorithms.All)]
	return alg.New(r, limitParams(alg, a, b, d), nil, prefix)
}

// kinds is the number of algorithms, each a kind the fuzz targets seed.
var kinds = uint8(len(algorithms.All))

func fuzzStore(t *testing.T) *memory.Store {
	s, err := memory.New(memory.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// FuzzConfig: any configuration either builds a limiter that then decides
// without error, or fails with core.ErrInvalidConfig. Never a panic.
func FuzzConfig(f *testing.F) {
	for kind := range kinds {
		f.Add(kind, int64(10), int64(1), int64(time.Second), "")
		f.Add(kind, int64(0), int64(0), int64(0), "p:")
		f.Add(kind, int64(-1), int64(-1), int64(-1), "{")
		f.Add(kind, int64(1<<63-1), int64(1<<63-1), int64(1<<63-1), "}")
		f.Add(kind, int64(-1<<63), int64(-1<<63), int64(-1<<63), "\xff\x00")
		f.Add(kind, int64(1), int64(1), int64(1), "ns")    // 1 ns
		f.Add(kind, int64(1), int64(1), int64(1500), "µs") // 1.5 µs
		f.Add(kind, int64(1<<50), int64(1<<50), int64(time.Microsecond), "")
		f.Add(kind, int64(10001), int64(3), int64(24*time.Hour), "")
	}
	f.Fuzz(func(t *testing.T, kind uint8, a, b, d int64, prefix string) {
		l, err := build(fuzzStore(t), kind, a, b, time.Duration(d), prefix)
		if err != nil {
			if !errors.Is(err, core.ErrInvalidConfig) {
				t.Fatalf("New: %v; want ErrInvalidConfig", err)
			}
			return
		}
		ctx := context.Background()
		if _, err := l.Allow(ctx, "k"); err != nil {
			t.Fatalf("Allow on a valid limiter: %v", err)
		}
		if _, err := l.Peek(ctx, "k"); err != nil {
			t.Fatalf("Peek on a valid limiter: %v", err)
		}
	})
}

// FuzzKeyAndCost: any key and cost either decide, or fail with
// core.ErrInvalidKey or core.ErrInvalidCost. Never a panic, never a clamp:
// a valid call always decides.
func FuzzKeyAndCost(f *testing.F) {
	for kind := range kinds {
		for _, k := range []string{"", "k", "{", "}", "%7B", "a{b}c", "\x00\xff\xfe", "\xc3\x28", strings.Repeat("k", 1<<20), strings.Repeat("{", 100)} {
			for _, n := range []int64{-1 << 63, -1, 0, 1, 5, 6, 1<<63 - 1} {
				f.Add(kind, k, n)
			}
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, key string, n int64) {
		const limit = 5
		l, err := build(fuzzStore(t), kind, limit, 1, time.Minute, "")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		validKey := key != "" && len(key) <= core.MaxKeyLen
		d, err := l.AllowN(ctx, key, n)
		switch {
		case !validKey:
			if !errors.Is(err, core.ErrInvalidKey) {
				t.Fatalf("AllowN(%d-byte key, %d) = %v; want ErrInvalidKey", len(key), n, err)
			}
		case n < 1 || n > limit:
			if !errors.Is(err, core.ErrInvalidCost) {
				t.Fatalf("AllowN(key, %d) = %v; want ErrInvalidCost", n, err)
			}
		default:
			if err != nil || !d.Allowed || d.Limit != limit {
				t.Fatalf("AllowN(key, %d) on a fresh limiter = %+v, %v", n, d, err)
			}
		}
		if _, err := l.Peek(ctx, key); (err == nil) != validKey {
			t.Fatalf("Peek: %v", err)
		}
		if err := l.Reset(ctx, key); (err == nil) != validKey {
			t.Fatalf("Reset: %v", err)
		}
	})
}

// FuzzClientIP: any remote address and forwarding headers give a key or an
// error, never a panic; an untrusted peer's headers never matter.
func FuzzClientIP(f *testing.F) {
	f.Add("203.0.113.7:1", "1.2.3.4", "for=5.6.7.8")
	f.Add("10.0.0.1:1", "1.2.3.4, 10.0.0.2", `for="[2001:db8::1]:80"`)
	f.Add("[2001:db8::1]:443", "", "")
	f.Add("garbage", "::::", "for=;for=\"")
	f.Add("10.0.0.1:1", strings.Repeat("10.0.0.1,", 1000), "")
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	byXFF := httplimit.ClientIP{TrustedProxies: proxies, Header: httplimit.XForwardedFor}
	byFwd := httplimit.ClientIP{TrustedProxies: proxies, Header: httplimit.Forwarded}
	f.Fuzz(func(t *testing.T, remote, xff, fwd string) {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = remote
		req.Header.Set("X-Forwarded-For", xff)
		req.Header.Set("Forwarded", fwd)
		k1, err1 := byXFF.Key(req)
		k2, err2 := httplimit.ClientIP{}.Key(req)
		k4, err4 := byFwd.Key(req)
		if (err1 == nil && k1 == "") || (err2 == nil && k2 == "") || (err4 == nil && k4 == "") {
			t.Fatal("empty key without an error")
		}
		if errors.Is(err1, core.ErrInvalidConfig) || errors.Is(err4, core.ErrInvalidConfig) {
			t.Fatalf("a valid ClientIP reports a configuration error: %v, %v", err1, err4)
		}
		req2 := httptest.NewRequest("GET", "/", nil)
		req2.RemoteAddr = remote
		if k3, _ := (httplimit.ClientIP{}).Key(req2); k3 != k2 {
			t.Fatalf("headers changed the key of an untrusted peer: %q vs %q", k2, k3)
		}
	})
}
