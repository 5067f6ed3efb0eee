package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/ratekit/ratekit/fakeclock"
)

// startXDSTLS starts a management server that serves only over TLS with
// a certificate of ca for xds.internal (and 127.0.0.1), and requires a
// client certificate of ca.
func startXDSTLS(t *testing.T, ca *testCA) *xdsServer {
	certFile, keyFile := ca.issue("xds", "xds.internal")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return startXDS(t, grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})))
}

// CONFIG_GRPC_XDS_SERVER_USE_TLS with CONFIG_GRPC_XDS_SERVER_TLS_CACERT,
// CONFIG_GRPC_XDS_SERVER_TLS_SAN and CONFIG_GRPC_XDS_CLIENT_TLS_CERT/KEY:
// the rules are loaded from a management server that requires mutual
// TLS.
func TestXDSTLS(t *testing.T) {
	ca := newTestCA(t)
	x := startXDSTLS(t, ca)
	x.set("1", xdsBasic(3))
	clientCert, clientKey := ca.issue("ratelimit", "ratelimit.internal")
	for _, san := range []string{"xds.internal", ""} { // "": the URL's host, 127.0.0.1
		r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{
			"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": x.Addr, "CONFIG_GRPC_XDS_NODE_ID": "test-node",
			"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL": "50ms",
			"CONFIG_GRPC_XDS_SERVER_USE_TLS":                "true", "CONFIG_GRPC_XDS_SERVER_TLS_CACERT": ca.File,
			"CONFIG_GRPC_XDS_SERVER_TLS_SAN":  san,
			"CONFIG_GRPC_XDS_CLIENT_TLS_CERT": clientCert, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY": clientKey,
		})
		checkResponse(t, "xds over TLS, SAN "+san, r.call("xds", desc("key1", "a")), ok, wantStatus{ok, 3, minute, 2})
	}
}

// syncBuffer is a log destination a test reads while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A management server whose certificate does not verify (another CA, or
// not naming CONFIG_GRPC_XDS_SERVER_TLS_SAN), or that wants a client
// certificate none is given for: nothing is loaded, and the log says why,
// naming the server and the certificate's problem. Started with
// FORCE_START_WITHOUT_INITIAL_CONFIG, as the server would otherwise wait
// for a first configuration (as envoyproxy/ratelimit does).
func TestXDSTLSRefused(t *testing.T) {
	ca := newTestCA(t)
	x := startXDSTLS(t, ca)
	x.set("1", xdsBasic(3))
	clientCert, clientKey := ca.issue("ratelimit", "ratelimit.internal")
	other := newTestCA(t)
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"another CA", map[string]string{"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": other.File,
			"CONFIG_GRPC_XDS_CLIENT_TLS_CERT": clientCert, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY": clientKey}, "certificate signed by unknown authority"},
		{"another SAN", map[string]string{"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": ca.File, "CONFIG_GRPC_XDS_SERVER_TLS_SAN": "other.internal",
			"CONFIG_GRPC_XDS_CLIENT_TLS_CERT": clientCert, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY": clientKey}, "not other.internal"},
		{"no client certificate", map[string]string{"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": ca.File}, "certificate required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{
				"USE_STATSD": "false", "HOST": "127.0.0.1", "PORT": "0", "GRPC_HOST": "127.0.0.1", "GRPC_PORT": "0",
				"DEBUG_HOST": "127.0.0.1", "DEBUG_PORT": "0", "RATEKIT_DECISION_TIMEOUT": "10s",
				"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": x.Addr, "CONFIG_GRPC_XDS_NODE_ID": "test-node",
				"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL": "50ms", "CONFIG_GRPC_XDS_SERVER_USE_TLS": "true",
				"FORCE_START_WITHOUT_INITIAL_CONFIG": "true",
			}
			for k, v := range tt.env {
				vars[k] = v
			}
			s, err := loadSettings(lookupMap(vars))
			if err != nil {
				t.Fatal(err)
			}
			var log syncBuffer
			srv, err := start(s, slog.New(slog.NewTextHandler(&log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				srv.stop(ctx)
			}()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(log.String(), tt.want) {
				if time.Now().After(deadline) {
					t.Fatalf("after 10s, the log does not say %q:\n%s", tt.want, log.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if line := lineWith(log.String(), tt.want); !strings.Contains(line, x.Addr) || !strings.Contains(line, "xDS") ||
				!strings.Contains(line, "CONFIG_GRPC_XDS_SERVER_TLS_CACERT") {
				t.Errorf("the error does not name the xDS server %s and the TLS settings: %s", x.Addr, line)
			}
			t.Log(lineWith(log.String(), tt.want))
			if succeeded, _ := srv.service.rules.Loads(); succeeded != 0 {
				t.Errorf("%d configurations loaded, want none", succeeded)
			}
		})
	}
}

func lineWith(text, s string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// The xDS TLS files are read at start: one missing or not PEM is refused,
// naming its variable, as are TLS files given without
// CONFIG_GRPC_XDS_SERVER_USE_TLS=true (they would be ignored).
func TestXDSTLSSettingsRefused(t *testing.T) {
	ca := newTestCA(t)
	cert, key := ca.issue("ratelimit", "ratelimit.internal")
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CONFIG_GRPC_XDS_SERVER_USE_TLS": "true", "CONFIG_GRPC_XDS_SERVER_TLS_CACERT": missing}, "CONFIG_GRPC_XDS_SERVER_TLS_CACERT"},
		{map[string]string{"CONFIG_GRPC_XDS_SERVER_USE_TLS": "true", "CONFIG_GRPC_XDS_SERVER_TLS_CACERT": key}, "CONFIG_GRPC_XDS_SERVER_TLS_CACERT"},
		{map[string]string{"CONFIG_GRPC_XDS_SERVER_USE_TLS": "true", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT": missing, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY": key}, "CONFIG_GRPC_XDS_CLIENT_TLS_CERT"},
		{map[string]string{"CONFIG_GRPC_XDS_SERVER_USE_TLS": "true", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT": cert}, "CONFIG_GRPC_XDS_CLIENT_TLS_CERT"},
		{map[string]string{"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": ca.File}, "CONFIG_GRPC_XDS_SERVER_USE_TLS"},
	} {
		env := map[string]string{"USE_STATSD": "false", "CONFIG_TYPE": "GRPC_XDS_SOTW"}
		for k, v := range tt.env {
			env[k] = v
		}
		_, err := loadSettings(lookupMap(env))
		if err == nil || !strings.Contains(err.Error(), tt.want+":") {
			t.Errorf("loadSettings(%v) = %v, want an error naming %s", tt.env, err, tt.want)
		}
	}
	env := map[string]string{"USE_STATSD": "false", "CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_USE_TLS": "true",
		"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": ca.File, "CONFIG_GRPC_XDS_CLIENT_TLS_CERT": cert, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY": key}
	if _, err := loadSettings(lookupMap(env)); err != nil {
		t.Errorf("good files: %v", err)
	}
}
