package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	registry "github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/internal/clientip"
)

//go:embed web
var webFiles embed.FS

// config is the algorithm and parameters the page chose.
type config struct {
	Algorithm string           `json:"algorithm"`
	Params    map[string]int64 `json:"params"`
}

// current is the live limiter and the middleware around the limited
// endpoint; replaced whole when the config changes.
type current struct {
	cfg     config
	algo    algorithm
	limiter core.Limiter
	limited http.Handler
}

// server is the demo: the page, and its small JSON API.
//
// The demo fails closed: when the store fails, the limited endpoint
// answers 503 with {"error": ...} instead of serving a request that no
// limiter decided, and the error is logged (paced: logs.go).
type server struct {
	runner core.ScriptRunner
	store  string // "memory", or the Redis client name and address
	log    *slog.Logger
	clock  core.Clock // paces the log
	paced  pacers
	mu     sync.Mutex
	gen    int
	cur    atomic.Pointer[current]
	leases atomic.Pointer[leaseLimiter] // the concurrency limiter (leases.go)
}

// newServer returns the demo over runner; store names it for the page.
// Errors are logged to log (nil: slog.Default()).
func newServer(runner core.ScriptRunner, store string, log *slog.Logger) (*server, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &server{runner: runner, store: store, log: log, clock: core.ClockFunc(time.Now)}
	a := algorithms[0]
	if err := s.configure(config{Algorithm: a.Name, Params: a.defaults()}); err != nil {
		return nil, err
	}
	if err := s.configureLeases(defaultLeases()); err != nil {
		return nil, err
	}
	return s, nil
}

// configure builds a limiter for cfg under a fresh key prefix, so that a
// new configuration starts from a clean state.
func (s *server) configure(cfg config) error {
	a, err := findAlgorithm(cfg.Algorithm)
	if err != nil {
		return err
	}
	p := map[string]int64{}
	for _, prm := range a.Params {
		v, ok := cfg.Params[prm.Name]
		if !ok && prm.reg.Kind == registry.Choice {
			continue // its Config field's zero value, as the registry's
		}
		if !ok {
			return fmt.Errorf("parameter %s is missing", prm.Name)
		}
		// A duration in milliseconds must fit a time.Duration: ms would
		// otherwise wrap around to a wrong, maybe valid, duration.
		if prm.isDuration() && (v > maxMS || v < -maxMS) {
			return fmt.Errorf("parameter %s: %d ms is too long for a duration (at most %d)", prm.Name, v, maxMS)
		}
		p[prm.Name] = v
	}
	for name := range cfg.Params {
		if _, ok := p[name]; !ok {
			return fmt.Errorf("parameter %s is not a parameter of %s", name, a.Name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	lim, err := a.build(s.runner, fmt.Sprintf("ratekit:demo:%d:%d:", time.Now().UnixNano(), s.gen), p, nil)
	if err != nil {
		return err
	}
	// RateLimit-Policy's w is the limiter's own (its Decision.Window).
	mw, err := httplimit.New(httplimit.Config{
		Limiter:       lim,
		Name:          a.Name,
		Key:           httplimit.KeyFunc(demoKey),
		Cost:          cost,
		Timeout:       storeTimeout,
		LegacyHeaders: true,
		Denied:        http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeDecision(w, r, http.StatusTooManyRequests) }),
		OnError:       s.onError,
		FailClosed:    true,
	})
	if err != nil {
		return err
	}
	limited := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := httplimit.DecisionFromContext(r.Context()); !ok {
			// Not reached with FailClosed; never answer
			// 200 for a request no limiter decided.
			writeError(w, http.StatusServiceUnavailable, errors.New("no decision: the rate limiter did not decide this request"))
			return
		}
		writeDecision(w, r, http.StatusOK)
	}))
	s.cur.Store(&current{cfg: config{Algorithm: a.Name, Params: p}, algo: a, limiter: lim, limited: limited})
	return nil
}

// maxMS is the longest duration, in milliseconds, a parameter may give.
const maxMS = math.MaxInt64 / int64(time.Millisecond)

// storeTimeout bounds every call to the demo's store (the middleware's
// Timeout, and a context deadline elsewhere): a store that hangs (a paused
// Redis; rueidis retrying a read while Redis is down) shows on the page
// as a failure within a second, and a busy machine's Redis still answers
// in time.
const storeTimeout = time.Second

// storeContext is r's context, ended after storeTimeout.
func storeContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), storeTimeout)
}

// onError is the middleware's OnError: it keeps err for the request's
// JSON answer (see jsonErrors) and logs it with the request's X-Demo-Key,
// at slog.LevelError for a store failure and slog.LevelDebug for a bad
// request.
func (s *server) onError(r *http.Request, err error) {
	if slot, ok := r.Context().Value(errSlotKey{}).(*errSlot); ok {
		slot.err = err
	}
	s.logError(r, err, keyAttr(r.Header.Get("X-Demo-Key")))
}

// logError logs an error met while answering r (logLine), with key: the
// key r is about, when there is one (keyAttr, requestKey).
func (s *server) logError(r *http.Request, err error, key ...slog.Attr) {
	level, msg := slog.LevelError, "demo: rate limiter store failed, answering 503 (fail closed)"
	switch {
	case isClientError(err):
		level, msg = slog.LevelDebug, "demo: bad request"
	case r.Context().Err() != nil:
		level, msg = slog.LevelDebug, "demo: store call cut short, the client went away"
	}
	s.logLine(r, level, msg, append(key, slog.Any("error", err))...)
}

// isClientError reports whether err is the request's fault (400), not the
// store's: a key or cost that cannot be read, or that the limiter refuses.
func isClientError(err error) bool {
	var re requestError
	return errors.Is(err, core.ErrInvalidKey) || errors.Is(err, core.ErrInvalidCost) || errors.As(err, &re)
}

// requestError is an error in the request itself, from demoKey or cost.
type requestError struct{ err error }

func (e requestError) Error() string { return e.err.Error() }
func (e requestError) Unwrap() error { return e.err }

// demoKey is the key the page chose, sent as X-Demo-Key: one value of at
// most httplimit.DefaultMaxLen bytes, bounded as httplimit.Header bounds
// a header key (the same code). The page's keys are short; a client's
// longer one would sit in the store, and in the logs, for nothing.
func demoKey(r *http.Request) (string, error) {
	k, err := clientip.Value("header", "X-Demo-Key", r.Header.Values("X-Demo-Key"), httplimit.DefaultMaxLen)
	if err != nil {
		return "", requestError{err}
	}
	return k, nil
}

// cost is the request's cost, ?n=, 1 by default.
func cost(r *http.Request) (int64, error) {
	q := r.URL.Query().Get("n")
	if q == "" {
		return 1, nil
	}
	n, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		return 0, requestError{fmt.Errorf("n=%q is not an integer", q)}
	}
	return n, nil
}

type decisionJSON struct {
	Allowed      bool    `json:"allowed"`
	Limit        int64   `json:"limit"`
	Remaining    int64   `json:"remaining"`
	RetryAfterMS float64 `json:"retry_after_ms"`
	ResetAfterMS float64 `json:"reset_after_ms"`
}

func toJSON(d core.Decision) decisionJSON {
	return decisionJSON{
		Allowed: d.Allowed, Limit: d.Limit, Remaining: d.Remaining,
		RetryAfterMS: float64(d.RetryAfter) / float64(time.Millisecond),
		ResetAfterMS: float64(d.ResetAfter) / float64(time.Millisecond),
	}
}

func writeDecision(w http.ResponseWriter, r *http.Request, status int) {
	d, _ := httplimit.DecisionFromContext(r.Context())
	writeJSON(w, status, toJSON(d))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// handler routes the page and the API:
//
//	GET  /                       the page (embedded, no CDN)
//	GET  /api/algorithms         the algorithms and their parameters
//	GET  /api/config             the current algorithm and parameters
//	PUT  /api/config             {"algorithm": ..., "params": {...}}: switch, fresh state
//	GET  /api/limited?n=1        the rate-limited endpoint (key in X-Demo-Key)
//	GET  /api/state?key=k        Peek at the key: the current state, no write
//	GET  /api/patterns           the traffic patterns of the side-by-side view
//	GET  /api/compare?pattern=p  p through every algorithm, simulated (compare.go)
//
// and the concurrency limiter's (leases.go):
//
//	GET  /api/leases/config      its limit and TTL
//	PUT  /api/leases/config      {"limit": ..., "ttl_ms": ...}: switch, no lease in flight
//	POST /api/leases?n=1         acquire a lease of cost n (key in X-Demo-Key)
//	POST /api/leases/release     {"key", "n", "id"}: release a lease
//	GET  /api/leases/state?key=k Peek at the key: the cost in flight, no write
//
// Every error under /api/ is JSON, {"error": ...}, and every API path
// refuses a query parameter it does not take (400).
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	web, _ := fs.Sub(webFiles, "web")
	mux.Handle("GET /", http.FileServerFS(web))
	s.route(mux, "GET /api/algorithms", nil, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		writeJSON(w, http.StatusOK, map[string]any{"algorithms": algorithms, "store": s.store})
	})
	s.route(mux, "GET /api/config", nil, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		writeJSON(w, http.StatusOK, s.cur.Load().cfg)
	})
	s.route(mux, "PUT /api/config", nil, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		var cfg config
		if err := decodeJSON(w, r, &cfg); err != nil {
			writeBodyError(w, err)
			return
		}
		if err := s.configure(cfg); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, s.cur.Load().cfg)
	})
	s.route(mux, "GET /api/limited", []string{"n"}, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		s.cur.Load().limited.ServeHTTP(w, r)
	})
	s.route(mux, "GET /api/state", []string{"key"}, func(w http.ResponseWriter, r *http.Request, q url.Values) {
		cur := s.cur.Load()
		ctx, cancel := storeContext(r)
		defer cancel()
		d, err := cur.limiter.Peek(ctx, q.Get("key"))
		if err != nil {
			s.logError(r, err, keyAttr(q.Get("key")))
			status := http.StatusServiceUnavailable
			if isClientError(err) {
				status = http.StatusBadRequest
			}
			writeError(w, status, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"algorithm": cur.algo.Name, "meaning": cur.algo.State, "decision": toJSON(d)})
	})
	s.route(mux, "GET /api/patterns", nil, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		writeJSON(w, http.StatusOK, map[string]any{
			"patterns": patterns, "span_ms": compareSpan.Milliseconds(),
			"bin_ms": compareBin.Milliseconds(), "window_ms": compareWindow.Milliseconds(),
		})
	})
	s.route(mux, "GET /api/compare", []string{"pattern"}, func(w http.ResponseWriter, r *http.Request, q url.Values) {
		p, err := findPattern(q.Get("pattern"))
		if err != nil {
			s.logError(r, requestError{err})
			writeError(w, http.StatusBadRequest, err)
			return
		}
		c, err := compare(r.Context(), p, algorithms)
		if err != nil {
			// Not a store of the user's: the simulation's own memory store.
			s.logLine(r, slog.LevelError, "demo: side-by-side simulation failed", slog.String("pattern", p.Name), slog.Any("error", err))
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, c)
	})
	s.leaseRoutes(mux)
	api := jsonErrors(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/") {
			api.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// route registers an API handler for pattern that takes the query
// parameters named in params, each at most once, and no other: a request
// with a query it does not take is a 400, so that a typo (?cost=5 for
// ?n=5) is an error instead of a request of another cost.
func (s *server) route(mux *http.ServeMux, pattern string, params []string, h func(http.ResponseWriter, *http.Request, url.Values)) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		q, err := query(r.URL.RawQuery, params)
		if err != nil {
			err = requestError{err}
			s.logError(r, err, requestKey(r, params)...)
			writeError(w, http.StatusBadRequest, err)
			return
		}
		h(w, r, q)
	})
}

// query parses a raw query that may give each of params once, and nothing
// else.
func query(raw string, params []string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", raw, err)
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		vs := q[name]
		switch {
		case !slices.Contains(params, name) && len(params) == 0:
			return nil, fmt.Errorf("query parameter %q: this path takes none", name)
		case !slices.Contains(params, name):
			return nil, fmt.Errorf("query parameter %q: this path takes only %s", name, strings.Join(params, ", "))
		case len(vs) > 1:
			return nil, fmt.Errorf("query parameter %q: given %d times, at most once", name, len(vs))
		}
	}
	return q, nil
}

// maxBody is the largest JSON body the API takes, in bytes.
const maxBody = 1 << 16

// decodeJSON reads a request's JSON body into v: one JSON object with no
// unknown field and nothing after it. A body over maxBody is an error
// wrapping *http.MaxBytesError.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return fmt.Errorf("body: %w", err)
		}
		return errors.New("body: more data after the JSON object")
	}
	return nil
}

// writeBodyError answers a body decodeJSON refused: 413 when it was too
// large, 400 otherwise.
func writeBodyError(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		status = http.StatusRequestEntityTooLarge
	}
	writeError(w, status, err)
}

// errSlot carries the error the middleware reported for one request (see
// server.onError) to jsonErrors, which answers it.
type errSlot struct{ err error }

type errSlotKey struct{}

// jsonErrors makes every error answer of next JSON: a response of status
// 400 or more that is not already application/json (from http.Error, in
// httplimit or the mux: 400, 404, 405, 503) is replaced by {"error": ...}
// with the same status and headers. The message is the error the
// middleware reported to OnError, when it reported one, or else the text
// of the body.
func jsonErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slot := &errSlot{}
		cw := &errorCapture{ResponseWriter: w}
		next.ServeHTTP(cw, r.WithContext(context.WithValue(r.Context(), errSlotKey{}, slot)))
		if !cw.capturing {
			return
		}
		msg := strings.TrimSpace(cw.body.String())
		if slot.err != nil {
			msg = slot.err.Error()
		}
		if msg == "" {
			msg = http.StatusText(cw.status)
		}
		w.Header().Del("Content-Length")
		writeError(w, cw.status, errors.New(msg))
	})
}

// errorCapture holds back a non-JSON error answer for jsonErrors.
type errorCapture struct {
	http.ResponseWriter
	wroteHeader bool
	capturing   bool
	status      int
	body        bytes.Buffer
}

func (c *errorCapture) WriteHeader(status int) {
	if c.wroteHeader {
		return
	}
	c.wroteHeader = true
	if status >= 400 && !strings.HasPrefix(c.Header().Get("Content-Type"), "application/json") {
		c.capturing, c.status = true, status
		return
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *errorCapture) Write(p []byte) (int, error) {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	if c.capturing {
		if c.body.Len() < 4096 {
			c.body.Write(p[:min(len(p), 4096-c.body.Len())])
		}
		return len(p), nil
	}
	return c.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (c *errorCapture) Unwrap() http.ResponseWriter { return c.ResponseWriter }
