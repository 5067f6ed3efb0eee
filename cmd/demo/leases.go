package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ratekit/ratekit/algorithms/concurrency"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

// leaseConfig is the concurrency limiter's configuration, as the page
// gives it: the most cost in flight per key, and a lease's life in whole
// milliseconds. Both are required (pointers, so that a missing one is
// told apart from a zero).
type leaseConfig struct {
	Limit *int64 `json:"limit"`
	TTLMS *int64 `json:"ttl_ms"`
}

// defaultLeases is the concurrency limiter the demo starts with: 3 in
// flight per key, leases that live 30 s unless released.
func defaultLeases() leaseConfig {
	limit, ttl := int64(3), int64(30000)
	return leaseConfig{Limit: &limit, TTLMS: &ttl}
}

// leaseLimiter is the live concurrency limiter; replaced whole when its
// configuration changes.
type leaseLimiter struct {
	cfg     leaseConfig
	limiter *concurrency.Limiter
}

// configureLeases builds a concurrency limiter for cfg under a fresh key
// prefix, so that a new configuration starts with no lease in flight (the
// leases of the old one are forgotten, and expire by themselves).
func (s *server) configureLeases(cfg leaseConfig) error {
	switch {
	case cfg.Limit == nil:
		return errors.New("limit is missing")
	case cfg.TTLMS == nil:
		return errors.New("ttl_ms is missing")
	case *cfg.TTLMS > maxMS || *cfg.TTLMS < -maxMS:
		return fmt.Errorf("ttl_ms: %d ms is too long for a duration (at most %d)", *cfg.TTLMS, maxMS)
	}
	limit, ttl := *cfg.Limit, *cfg.TTLMS
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	lim, err := concurrency.New(s.runner, concurrency.Config{
		Limit:  limit,
		TTL:    ms(ttl),
		Prefix: fmt.Sprintf("ratekit:demo:cc:%d:%d:", time.Now().UnixNano(), s.gen),
	})
	if err != nil {
		return err
	}
	s.leases.Store(&leaseLimiter{cfg: leaseConfig{Limit: &limit, TTLMS: &ttl}, limiter: lim})
	return nil
}

// leaseJSON is a lease as the API gives it out and takes it back. Its ID
// is a secret: whoever has it can release the lease, so the demo never
// logs it.
type leaseJSON struct {
	Key string `json:"key"`
	N   int64  `json:"n"`
	ID  string `json:"id"`
}

// leaseDecisionJSON is the answer to an acquire, and a Peek's decision:
// an acquire of cost 1, when peeking.
type leaseDecisionJSON struct {
	decisionJSON
	// InFlight is the cost in flight on the key: Limit - Remaining.
	InFlight int64 `json:"in_flight"`
	// Lease is the lease granted, when allowed; it lives TTLMS unless
	// released first.
	Lease *leaseJSON `json:"lease,omitempty"`
	TTLMS int64      `json:"ttl_ms"`
}

func toLeaseJSON(d core.Decision, ttl time.Duration) leaseDecisionJSON {
	return leaseDecisionJSON{decisionJSON: toJSON(d), InFlight: d.Limit - d.Remaining, TTLMS: ttl.Milliseconds()}
}

// leaseRoutes registers the concurrency limiter's API on mux (see handler).
func (s *server) leaseRoutes(mux *http.ServeMux) {
	s.route(mux, "GET /api/leases/config", nil, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		writeJSON(w, http.StatusOK, s.leases.Load().cfg)
	})
	s.route(mux, "PUT /api/leases/config", nil, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		var cfg leaseConfig
		if err := decodeJSON(w, r, &cfg); err != nil {
			writeBodyError(w, err)
			return
		}
		if err := s.configureLeases(cfg); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, s.leases.Load().cfg)
	})
	s.route(mux, "POST /api/leases", []string{"n"}, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		l := s.leases.Load()
		key, err := demoKey(r)
		var n int64
		if err == nil {
			n, err = cost(r)
		}
		var lease concurrency.Lease
		var d core.Decision
		if err == nil {
			ctx, cancel := storeContext(r)
			lease, d, err = l.limiter.AcquireN(ctx, key, n)
			cancel()
		}
		if err != nil {
			s.leaseError(w, r, r.Header.Get("X-Demo-Key"), err)
			return
		}
		out := toLeaseJSON(d, l.limiter.TTL())
		if !d.Allowed {
			w.Header().Set("Retry-After", strconv.FormatInt(ratelimitfield.RetryAfter(d.RetryAfter), 10))
			writeJSON(w, http.StatusTooManyRequests, out)
			return
		}
		out.Lease = &leaseJSON{Key: lease.Key, N: lease.N, ID: lease.ID}
		writeJSON(w, http.StatusOK, out)
	})
	s.route(mux, "POST /api/leases/release", nil, func(w http.ResponseWriter, r *http.Request, _ url.Values) {
		var lj leaseJSON
		if err := decodeJSON(w, r, &lj); err != nil {
			writeBodyError(w, err)
			return
		}
		ctx, cancel := storeContext(r)
		defer cancel()
		released, err := s.leases.Load().limiter.Release(ctx, concurrency.Lease{Key: lj.Key, N: lj.N, ID: lj.ID})
		if err != nil {
			s.leaseError(w, r, lj.Key, err)
			return
		}
		out := map[string]any{"released": released}
		if !released {
			out["why"] = "the lease was not live: it had expired, was released already, or was never issued on this key with this cost by the current limiter"
		}
		writeJSON(w, http.StatusOK, out)
	})
	s.route(mux, "GET /api/leases/state", []string{"key"}, func(w http.ResponseWriter, r *http.Request, q url.Values) {
		l := s.leases.Load()
		ctx, cancel := storeContext(r)
		defer cancel()
		d, err := l.limiter.Peek(ctx, q.Get("key"))
		if err != nil {
			s.leaseError(w, r, q.Get("key"), err)
			return
		}
		writeJSON(w, http.StatusOK, toLeaseJSON(d, l.limiter.TTL()))
	})
}

// leaseError answers and logs an error of the lease API: 400 for the
// request's fault, 503 (fail closed) for the store's. The log gets the
// key but never a lease's ID: an error about a malformed lease, whose text
// quotes the ID it was given, is logged as the bare core.ErrInvalidLease.
func (s *server) leaseError(w http.ResponseWriter, r *http.Request, key string, err error) {
	status := http.StatusServiceUnavailable
	if isClientError(err) || errors.Is(err, core.ErrInvalidLease) {
		status = http.StatusBadRequest
	}
	logged := err
	if errors.Is(err, core.ErrInvalidLease) {
		logged = core.ErrInvalidLease
	}
	level, msg := slog.LevelError, "demo: concurrency limiter store failed, answering 503 (fail closed)"
	switch {
	case status == http.StatusBadRequest:
		level, msg = slog.LevelDebug, "demo: bad request"
	case r.Context().Err() != nil:
		level, msg = slog.LevelDebug, "demo: store call cut short, the client went away"
	}
	s.logLine(r, level, msg, keyAttr(key), slog.Any("error", logged))
	writeError(w, status, err)
}
