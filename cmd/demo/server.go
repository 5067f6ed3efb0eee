package main

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/httplimit"
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
type server struct {
	runner core.ScriptRunner
	store  string // "memory", or the Redis client name and address
	mu     sync.Mutex
	gen    int
	cur    atomic.Pointer[current]
}

func newServer(runner core.ScriptRunner, store string) (*server, error) {
	s := &server{runner: runner, store: store}
	a := algorithms[0]
	p := map[string]int64{}
	for _, prm := range a.Params {
		p[prm.Name] = prm.Default
	}
	if err := s.configure(config{Algorithm: a.Name, Params: p}); err != nil {
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
		if !ok {
			return fmt.Errorf("parameter %s is missing", prm.Name)
		}
		p[prm.Name] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	lim, err := a.build(s.runner, fmt.Sprintf("ratekit:demo:%d:%d:", time.Now().UnixNano(), s.gen), p)
	if err != nil {
		return err
	}
	policy := httplimit.Policy{Name: a.Name, Limiter: lim}
	if w, ok := p["window_ms"]; ok {
		policy.Window = ms(w)
	}
	mw, err := httplimit.New(httplimit.Config{
		Policies:      []httplimit.Policy{policy},
		Key:           demoKey,
		Cost:          cost,
		LegacyHeaders: true,
		Denied:        http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeDecision(w, r, http.StatusTooManyRequests) }),
	})
	if err != nil {
		return err
	}
	limited := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeDecision(w, r, http.StatusOK) }))
	s.cur.Store(&current{cfg: config{Algorithm: a.Name, Params: p}, algo: a, limiter: lim, limited: limited})
	return nil
}

// demoKey is the key the page chose, sent as X-Demo-Key.
func demoKey(r *http.Request) (string, error) {
	if k := r.Header.Get("X-Demo-Key"); k != "" {
		return k, nil
	}
	return "", fmt.Errorf("header X-Demo-Key is missing")
}

func cost(r *http.Request) (int64, error) {
	q := r.URL.Query().Get("n")
	if q == "" {
		return 1, nil
	}
	return strconv.ParseInt(q, 10, 64)
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
//	GET  /                 the page (embedded, no CDN)
//	GET  /api/algorithms   the algorithms and their parameters
//	GET  /api/config       the current algorithm and parameters
//	PUT  /api/config       {"algorithm": ..., "params": {...}}: switch, fresh state
//	GET  /api/limited?n=1  the rate-limited endpoint (key in X-Demo-Key)
//	GET  /api/state?key=k  Peek at the key: the current state, no write
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	web, _ := fs.Sub(webFiles, "web")
	mux.Handle("GET /", http.FileServerFS(web))
	mux.HandleFunc("GET /api/algorithms", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"algorithms": algorithms, "store": s.store})
	})
	mux.HandleFunc("GET /api/config", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.cur.Load().cfg)
	})
	mux.HandleFunc("PUT /api/config", func(w http.ResponseWriter, r *http.Request) {
		var cfg config
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&cfg); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		if err := s.configure(cfg); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, s.cur.Load().cfg)
	})
	mux.HandleFunc("GET /api/limited", func(w http.ResponseWriter, r *http.Request) {
		s.cur.Load().limited.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		cur := s.cur.Load()
		d, err := cur.limiter.Peek(r.Context(), r.URL.Query().Get("key"))
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"algorithm": cur.algo.Name, "meaning": cur.algo.State, "decision": toJSON(d)})
	})
	return mux
}
