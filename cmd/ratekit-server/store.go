package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"os"
	"runtime"
	"strings"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/memory"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
)

// openStore opens the store the settings name: the memory store, or Redis
// (single, cluster or sentinel) through rueidis, which pipelines the
// concurrent decisions of every gRPC stream on shared connections. The
// returned function closes it.
func openStore(s settings) (core.ScriptRunner, func(), error) {
	if s.Backend == "memory" {
		var opts []memory.Option
		if s.clock != nil {
			opts = append(opts, memory.WithClock(s.clock))
		}
		st, err := memory.New(opts...)
		if err != nil {
			return nil, nil, err
		}
		return st, func() {}, nil
	}
	opt, err := redisOptions(s)
	if err != nil {
		return nil, nil, err
	}
	client, err := rueidis.NewClient(opt)
	if errors.Is(err, rueidis.ErrNoCache) {
		opt.DisableCache = true // a server without RESP3 or CLIENT TRACKING
		client, err = rueidis.NewClient(opt)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("REDIS_URL %s: %w", maskURL(s.RedisURL), err)
	}
	st, err := rueidisstore.New(client)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return st, client.Close, nil
}

// redisOptions translates envoyproxy/ratelimit's REDIS_* settings:
//
//   - REDIS_POOL_SIZE, the most connections to each Redis node, bounds
//     PipelineMultiplex: rueidis keeps 2^PipelineMultiplex connections to
//     a node, each carrying every concurrent call (auto pipelining), as
//     many as its default (up to 4, by GOMAXPROCS: more connections carry
//     fewer calls per write, and cost a write system call each) and no
//     more than the largest power of two not above the size (1: one);
//     and BlockingPoolSize, the pool of dedicated connections, which
//     ratekit's calls never take;
//   - REDIS_PIPELINE_WINDOW is MaxFlushDelay, how long a connection
//     waits to write more calls at once (radix's WriteFlushInterval);
//   - REDIS_TIMEOUT bounds a dial (Dialer.Timeout, the sentinels' too)
//     and the wait for a reply (ConnWriteTimeout);
//   - REDIS_PIPELINE_LIMIT does nothing, as in envoyproxy/ratelimit.
func redisOptions(s settings) (rueidis.ClientOption, error) {
	opt := rueidis.ClientOption{
		DisableCache:      true, // ratekit never uses client-side caching
		ConnWriteTimeout:  s.RedisTimeout,
		MaxFlushDelay:     s.RedisPipelineWindow,
		PipelineMultiplex: pipelineMultiplex(s.RedisPoolSize),
		BlockingPoolSize:  s.RedisPoolSize,
		DisableRetry:      true, // a decision never runs twice
	}
	opt.Dialer.Timeout = s.RedisTimeout
	if user, pass, ok := strings.Cut(s.RedisAuth, ":"); ok {
		opt.Username, opt.Password = user, pass
	} else {
		opt.Password = s.RedisAuth
	}
	if s.RedisTLS {
		cfg, err := redisTLS(s)
		if err != nil {
			return opt, err
		}
		opt.TLSConfig = cfg
	}
	addrs := strings.Split(s.RedisURL, ",")
	switch s.RedisType {
	case "single":
		opt.InitAddress = []string{s.RedisURL}
		opt.ForceSingleClient = true
		if s.RedisSocketType == "unix" {
			path := s.RedisURL
			opt.DialCtxFn = func(ctx context.Context, _ string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
				conn, err := d.DialContext(ctx, "unix", path)
				if err != nil || cfg == nil {
					return conn, err
				}
				return tls.Client(conn, cfg), nil
			}
		}
	case "cluster":
		opt.InitAddress = addrs
	case "sentinel":
		opt.Sentinel = rueidis.SentinelOption{MasterSet: addrs[0], TLSConfig: opt.TLSConfig}
		opt.Sentinel.Dialer.Timeout = s.RedisTimeout
		if user, pass, ok := strings.Cut(s.RedisSentinelAuth, ":"); ok {
			opt.Sentinel.Username, opt.Sentinel.Password = user, pass
		} else {
			opt.Sentinel.Password = s.RedisSentinelAuth
		}
		opt.InitAddress = addrs[1:]
	}
	return opt, nil
}

// pipelineMultiplex is the PipelineMultiplex of at most n connections
// to a node: rueidis's default (2^min(2, log2 GOMAXPROCS) connections),
// fewer when n is below it; -1 for one connection (0 would ask rueidis
// for its default).
func pipelineMultiplex(n int) int {
	if m := min(bits.Len(uint(n))-1, 2, bits.Len(uint(runtime.GOMAXPROCS(0)))-1); m > 0 {
		return m
	}
	return -1
}

// redisTLS builds the TLS configuration of REDIS_TLS and its certificates,
// as envoyproxy/ratelimit's utils.TlsConfigFromFiles does.
func redisTLS(s settings) (*tls.Config, error) {
	cfg := &tls.Config{InsecureSkipVerify: s.RedisTLSSkipHostnameVerification}
	if s.RedisTLSClientCert != "" {
		pair, err := tls.LoadX509KeyPair(s.RedisTLSClientCert, s.RedisTLSClientKey)
		if err != nil {
			return nil, fmt.Errorf("REDIS_TLS_CLIENT_CERT: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if s.RedisTLSCACert != "" {
		pool, err := certPool(s.RedisTLSCACert)
		if err != nil {
			return nil, fmt.Errorf("REDIS_TLS_CACERT: %w", err)
		}
		cfg.RootCAs = pool
	}
	if s.RedisTLSSkipHostnameVerification {
		// Verify the chain, not the name (envoyproxy/ratelimit does the same).
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, cfg.RootCAs)
		}
	}
	return cfg, nil
}

func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("tls: no certificate from the server")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return fmt.Errorf("tls: server certificate: %w", err)
		}
		certs[i] = c
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(opts)
	return err
}

// certPool is the system pool with the PEM file's certificates added.
func certPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool, _ := x509.SystemCertPool()
	if pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// maskURL hides a password written into a Redis URL, for error messages.
func maskURL(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 {
		return "***" + u[at:]
	}
	return u
}
