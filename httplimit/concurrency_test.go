package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/httplimit"
)

// recording is a ConcurrencyLimiter that counts its calls and signals
// each extension.
type recording struct {
	*concurrency.Limiter
	acquires, releases, extends atomic.Int64
	extended                    chan struct{}
}

func (r *recording) AcquireN(ctx context.Context, key string, n int64) (concurrency.Lease, core.Decision, error) {
	r.acquires.Add(1)
	return r.Limiter.AcquireN(ctx, key, n)
}

func (r *recording) Release(ctx context.Context, l concurrency.Lease) (bool, error) {
	r.releases.Add(1)
	return r.Limiter.Release(ctx, l)
}

func (r *recording) Extend(ctx context.Context, l concurrency.Lease) (bool, error) {
	ok, err := r.Limiter.Extend(ctx, l)
	r.extends.Add(1)
	if r.extended != nil {
		r.extended <- struct{}{}
	}
	return ok, err
}

func ccLimiter(t *testing.T, limit int64, ttl time.Duration) (*concurrency.Limiter, *fakeclock.Clock) {
	s, clock := memStore(t)
	l, err := concurrency.New(s, concurrency.Config{Limit: limit, TTL: ttl, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return l, clock
}

func ccMiddleware(t *testing.T, cfg httplimit.ConcurrencyConfig) func(http.Handler) http.Handler {
	t.Helper()
	m, err := httplimit.Concurrency(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func inFlight(t *testing.T, l *concurrency.Limiter, key string) int64 {
	t.Helper()
	d, err := l.Peek(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return d.Limit - d.Remaining
}

// blocking is a handler that reports each request it starts and holds it
// until release is closed.
type blocking struct {
	started chan struct{}
	release chan struct{}
}

func newBlocking() *blocking {
	return &blocking{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.started <- struct{}{}
	<-b.release
	io.WriteString(w, "done")
}

// Two slots: two requests in flight, the third refused with 429 and
// Retry-After, then served once one of the two has returned.
func TestConcurrencyCapsInFlight(t *testing.T) {
	lim, _ := ccLimiter(t, 2, 30*time.Second)
	b := newBlocking()
	h := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: lim})(b)
	var wg sync.WaitGroup
	codes := make(chan int, 3)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- get(t, h, "192.0.2.1:1", nil).StatusCode
		}()
		<-b.started
	}
	if n := inFlight(t, lim, "ip4:192.0.2.1"); n != 2 {
		t.Fatalf("%d in flight, want 2", n)
	}
	res := get(t, h, "192.0.2.1:2", nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "30" || !strings.Contains(string(body), "in flight") {
		t.Fatalf("third request: %d, Retry-After %q, %q", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
	// Another client has slots of its own.
	go func() { codes <- get(t, h, "192.0.2.9:1", nil).StatusCode }()
	<-b.started
	close(b.release)
	wg.Wait()
	for range 3 {
		if c := <-codes; c != http.StatusOK {
			t.Fatalf("a request in flight answered %d", c)
		}
	}
	if n := inFlight(t, lim, "ip4:192.0.2.1"); n != 0 {
		t.Fatalf("%d in flight after the handlers returned", n)
	}
	if res := get(t, h, "192.0.2.1:3", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("after the handlers returned: %d", res.StatusCode)
	}
}

// 503 instead of 429, a JSON body, a custom Denied handler, and the cost.
func TestConcurrencyDenials(t *testing.T) {
	lim, _ := ccLimiter(t, 3, 7*time.Second)
	b := newBlocking()
	defer close(b.release)
	cost := func(r *http.Request) (int64, error) { return strconv.ParseInt(r.Header.Get("X-Cost"), 10, 64) }
	h := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: lim, Status: http.StatusServiceUnavailable, Cost: cost})(b)
	go get(t, h, "192.0.2.1:1", map[string]string{"X-Cost": "2"})
	<-b.started
	res := get(t, h, "192.0.2.1:1", map[string]string{"X-Cost": "2", "Accept": "application/json"})
	var body struct {
		Error      string `json:"error"`
		RetryAfter int64  `json:"retry_after"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusServiceUnavailable || body.RetryAfter != 7 || res.Header.Get("Retry-After") != "7" {
		t.Fatalf("a cost of 2 with 1 slot left: %d %+v %v", res.StatusCode, body, err)
	}
	for _, c := range []string{"0", "4", "x"} {
		if res := get(t, h, "192.0.2.1:1", map[string]string{"X-Cost": c}); res.StatusCode != http.StatusBadRequest {
			t.Fatalf("cost %q: %d", c, res.StatusCode)
		}
	}
	denied := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _ := httplimit.DecisionFromContext(r.Context())
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, strconv.FormatInt(d.Remaining, 10))
	})
	h2 := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: lim, Cost: cost, Denied: denied})(b)
	res = get(t, h2, "192.0.2.1:1", map[string]string{"X-Cost": "3"})
	if got, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusTeapot || string(got) != "1" {
		t.Fatalf("Denied handler: %d %q", res.StatusCode, got)
	}
}

// A handler that panics gives its slot back, and the panic goes on.
func TestConcurrencyPanicReleases(t *testing.T) {
	lim, _ := ccLimiter(t, 1, time.Minute)
	boom := errors.New("boom")
	h := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: lim})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(boom)
	}))
	for range 3 {
		func() {
			defer func() {
				if p := recover(); p != boom {
					t.Fatalf("recovered %v, want the handler's panic", p)
				}
			}()
			get(t, h, "192.0.2.1:1", nil)
			t.Fatal("no panic")
		}()
		if n := inFlight(t, lim, "ip4:192.0.2.1"); n != 0 {
			t.Fatalf("%d in flight after a panic", n)
		}
	}
}

// A client that goes away ends its request's context; the handler returns
// and the lease is released all the same, although the request's context
// has ended (a release sent with it would never reach the store).
func TestConcurrencyClientGoesAway(t *testing.T) {
	lim, _ := ccLimiter(t, 1, time.Hour)
	rec := &recording{Limiter: lim}
	started, returned := make(chan struct{}), make(chan struct{})
	h := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: rec})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		close(returned)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before srv.Close, should the test fail early
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	errc := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	<-started
	if n := inFlight(t, lim, "ip4:127.0.0.1"); n != 1 {
		t.Fatalf("%d in flight", n)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v", err)
	}
	<-returned
	// The release follows the handler's return: wait for it.
	deadline := time.Now().Add(time.Minute)
	for rec.releases.Load() == 0 || inFlight(t, lim, "ip4:127.0.0.1") != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not released after the client went away (%d releases)", rec.releases.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// With ExtendEvery the lease outlives its TTL while the handler runs and
// the client waits; once the client has gone away it is no longer
// extended, expires, and the late release is reported.
func TestConcurrencyExtendEvery(t *testing.T) {
	const ttl = 10 * time.Second
	lim, clock := ccLimiter(t, 1, ttl)
	rec := &recording{Limiter: lim, extended: make(chan struct{})}
	var reported []error
	var mu sync.Mutex
	b := newBlocking()
	var unblock sync.Once
	h := ccMiddleware(t, httplimit.ConcurrencyConfig{
		Limiter: rec, ExtendEvery: time.Millisecond,
		OnError: func(_ *http.Request, err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() },
	})(b)
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer unblock.Do(func() { close(b.release) }) // before srv.Close, should the test fail early
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	<-b.started
	// An extension may come between the one the test waited for and the
	// test's step of the clock, so a step is a third of the TTL: the lease
	// was then extended at most two steps ago. Five times the TTL passes,
	// each step after an extension: the lease lives on.
	extended := func() {
		t.Helper()
		select {
		case <-rec.extended:
		case <-time.After(time.Minute):
			t.Fatal("no extension for a minute")
		}
	}
	for range 15 {
		extended()
		clock.Advance(ttl / 3)
	}
	extended()
	if n := inFlight(t, lim, "ip4:127.0.0.1"); n != 1 {
		t.Fatalf("%d in flight after 5 TTLs of extensions", n)
	}
	// The client leaves; the handler does not notice. Extensions stop, and
	// the lease expires at its TTL.
	cancel()
	<-done
	stopped := time.Now().Add(time.Minute)
	for {
		select {
		case <-rec.extended:
			if time.Now().After(stopped) {
				t.Fatal("still extending a minute after the client left")
			}
			continue
		case <-time.After(50 * time.Millisecond):
		}
		break
	}
	clock.Advance(ttl)
	if n := inFlight(t, lim, "ip4:127.0.0.1"); n != 0 {
		t.Fatalf("%d in flight a TTL after the client left", n)
	}
	unblock.Do(func() { close(b.release) })
	// The release comes first, then the report of the expired lease: wait
	// for both.
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := len(reported)
		mu.Unlock()
		if rec.releases.Load() > 0 && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d releases, %d errors reported", rec.releases.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "expired before its handler returned") {
		t.Fatalf("reported %v, want the expired lease", reported)
	}
}

// failingLeases is a ConcurrencyLimiter whose store is down.
type failingLeases struct{}

var errDown = errors.New("down")

func (failingLeases) AcquireN(context.Context, string, int64) (concurrency.Lease, core.Decision, error) {
	return concurrency.Lease{}, core.Decision{}, errDown
}
func (failingLeases) Release(context.Context, concurrency.Lease) (bool, error) { return false, errDown }
func (failingLeases) Extend(context.Context, concurrency.Lease) (bool, error)  { return false, errDown }
func (failingLeases) Limit() int64                                             { return 1 }

func TestConcurrencyStoreErrors(t *testing.T) {
	var reported atomic.Int64
	onErr := func(_ *http.Request, err error) {
		if errors.Is(err, errDown) {
			reported.Add(1)
		}
	}
	open := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: failingLeases{}, OnError: onErr})(ok)
	if res := get(t, open, "192.0.2.1:1", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("fail open: %d", res.StatusCode)
	}
	closed := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: failingLeases{}, OnError: onErr, FailClosed: true})(ok)
	if res := get(t, closed, "192.0.2.1:1", nil); res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("fail closed: %d", res.StatusCode)
	}
	if reported.Load() != 2 {
		t.Fatalf("%d errors reported, want 2", reported.Load())
	}

	// A release that fails is reported at error level; the lease frees
	// itself at its TTL.
	lim, _ := ccLimiter(t, 1, time.Minute)
	logs := &recorder{level: slog.LevelDebug}
	h := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: brokenRelease{lim}, Logger: slog.New(logs)})(ok)
	if res := get(t, h, "192.0.2.1:1", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("%d", res.StatusCode)
	}
	if lv := logs.levels(); len(lv) != 1 || lv[0] != slog.LevelError {
		t.Fatalf("logged %v, want one error", lv)
	}
}

type brokenRelease struct{ *concurrency.Limiter }

func (brokenRelease) Release(context.Context, concurrency.Lease) (bool, error) { return false, errDown }

func TestConcurrencyConfigErrors(t *testing.T) {
	lim, _ := ccLimiter(t, 1, time.Minute)
	for _, c := range []struct {
		name, field string
		cfg         httplimit.ConcurrencyConfig
	}{
		{"no limiter", "Limiter is nil", httplimit.ConcurrencyConfig{}},
		// A typed nil passed and panicked at the first request.
		{"typed-nil limiter", "ConcurrencyConfig.Limiter is nil or cannot decide", httplimit.ConcurrencyConfig{Limiter: (*concurrency.Limiter)(nil)}},
		{"status 418", "Status", httplimit.ConcurrencyConfig{Limiter: lim, Status: http.StatusTeapot}},
		{"status 200", "Status", httplimit.ConcurrencyConfig{Limiter: lim, Status: http.StatusOK}},
		{"negative ExtendEvery", "ExtendEvery", httplimit.ConcurrencyConfig{Limiter: lim, ExtendEvery: -time.Second}},
		{"negative ReleaseTimeout", "ReleaseTimeout", httplimit.ConcurrencyConfig{Limiter: lim, ReleaseTimeout: -time.Second}},
		{"bad ClientIP", "Key", httplimit.ConcurrencyConfig{Limiter: lim, Key: httplimit.ClientIP{Header: httplimit.XForwardedFor}}},
		{"nil KeyFunc", "Key", httplimit.ConcurrencyConfig{Limiter: lim, Key: httplimit.KeyFunc(nil)}},
	} {
		_, err := httplimit.Concurrency(c.cfg)
		if !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v, want ErrInvalidConfig naming %s", c.name, err, c.field)
		}
	}
}

// A key the Keyer cannot read is the client's fault (400); a Keyer that is
// misconfigured is the server's (500). Neither takes a slot.
func TestConcurrencyKeyErrors(t *testing.T) {
	lim, _ := ccLimiter(t, 1, time.Minute)
	rec := &recording{Limiter: lim}
	quiet := slog.New(slog.DiscardHandler)
	bad := httplimit.ConcurrencyConfig{Limiter: rec, Logger: quiet, Key: httplimit.KeyFunc(func(*http.Request) (string, error) { return "", errors.New("no key") })}
	if res := get(t, ccMiddleware(t, bad)(ok), "192.0.2.1:1", nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad key: %d", res.StatusCode)
	}
	bad.Key = httplimit.KeyFunc(func(*http.Request) (string, error) { return "", core.ErrInvalidConfig })
	if res := get(t, ccMiddleware(t, bad)(ok), "192.0.2.1:1", nil); res.StatusCode != http.StatusInternalServerError {
		t.Fatalf("misconfigured Keyer: %d", res.StatusCode)
	}
	empty := httplimit.ConcurrencyConfig{Limiter: rec, Logger: quiet, Key: httplimit.KeyFunc(func(*http.Request) (string, error) { return "", nil })}
	if res := get(t, ccMiddleware(t, empty)(ok), "192.0.2.1:1", nil); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("empty key: %d", res.StatusCode)
	}
	if rec.releases.Load() != 0 {
		t.Fatalf("%d releases for requests that took no slot", rec.releases.Load())
	}
}

// The handler finds its lease in the context, to extend it itself.
func TestLeaseFromContext(t *testing.T) {
	lim, clock := ccLimiter(t, 1, 10*time.Second)
	h := ccMiddleware(t, httplimit.ConcurrencyConfig{Limiter: lim})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, ok := httplimit.LeaseFromContext(r.Context())
		if !ok || lease.Key != "ip4:192.0.2.1" || lease.N != 1 {
			t.Errorf("LeaseFromContext = %+v, %v", lease, ok)
		}
		clock.Advance(9 * time.Second)
		if ok, err := lim.Extend(r.Context(), lease); !ok || err != nil {
			t.Errorf("Extend: %v, %v", ok, err)
		}
		clock.Advance(9 * time.Second)
		if n := inFlight(t, lim, "ip4:192.0.2.1"); n != 1 {
			t.Errorf("%d in flight after the handler's own extension", n)
		}
	}))
	if res := get(t, h, "192.0.2.1:1", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("%d", res.StatusCode)
	}
	if _, ok := httplimit.LeaseFromContext(context.Background()); ok {
		t.Fatal("a lease in a bare context")
	}
}
