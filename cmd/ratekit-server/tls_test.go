package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// testCA issues certificates for the TLS tests, written as PEM files.
type testCA struct {
	t    *testing.T
	dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	File string // the CA certificate's PEM file
}

func newTestCA(t *testing.T) *testCA {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{t: t, dir: t.TempDir(), cert: cert, key: key}
	ca.File = ca.write("ca.pem", "CERTIFICATE", der)
	return ca
}

func (ca *testCA) write(name, typ string, der []byte) string {
	path := filepath.Join(ca.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return path
}

// issue returns the PEM files of a certificate for dnsName (and 127.0.0.1).
func (ca *testCA) issue(name, dnsName string) (certFile, keyFile string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{dnsName}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return ca.write(name+".pem", "CERTIFICATE", der), ca.write(name+"-key.pem", "EC PRIVATE KEY", kder)
}

// GRPC_SERVER_USE_TLS with GRPC_CLIENT_TLS_CACERT and GRPC_CLIENT_TLS_SAN:
// a client with a certificate of that CA naming the SAN is served; one
// naming another is refused.
func TestGRPCMutualTLS(t *testing.T) {
	ca := newTestCA(t)
	serverCert, serverKey := ca.issue("server", "ratelimit")
	goodCert, goodKey := ca.issue("envoy", "envoy.internal")
	badCert, badKey := ca.issue("other", "other.internal")
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{
		"GRPC_SERVER_USE_TLS": "true", "GRPC_SERVER_TLS_CERT": serverCert, "GRPC_SERVER_TLS_KEY": serverKey,
		"GRPC_CLIENT_TLS_CACERT": ca.File, "GRPC_CLIENT_TLS_SAN": "envoy.internal",
	})
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	call := func(certFile, keyFile string) error {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		creds := credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: "ratelimit"})
		conn, err := grpc.NewClient(r.srv.GRPCAddr, grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{
			Domain: "extras", Descriptors: []*commonv3.RateLimitDescriptor{desc("small", "tls")}})
		return err
	}
	if err := call(goodCert, goodKey); err != nil {
		t.Errorf("a client naming the SAN: %v, want served", err)
	}
	if err := call(badCert, badKey); err == nil {
		t.Error("a client naming another SAN was served, want refused")
	}
}

// REDIS_TLS with REDIS_TLS_CACERT: the store over TLS.
func TestRedisTLS(t *testing.T) {
	ca := newTestCA(t)
	cert, key := ca.issue("redis", "localhost")
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	redistest.Start(t, "--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca.File, "--tls-auth-clients", "no")
	r := startRLS(t, "", fakeclock.New(epoch), map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "127.0.0.1:" + strconv.Itoa(port), "REDIS_TLS": "true", "REDIS_TLS_CACERT": ca.File,
	})
	checkResponse(t, "over TLS", r.call("extras", desc("small", "tls")), ok, wantStatus{ok, 3, minute, 2})
}
