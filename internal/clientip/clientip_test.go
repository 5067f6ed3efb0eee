package clientip_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/ratekit/ratekit/internal/clientip"
)

// TestKey: the walk from the right past trusted hops, with header names
// in any case (gRPC metadata keys are lower case). httplimit's tests
// cover the walk in depth through HTTP requests.
func TestKey(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, tt := range []struct {
		header, remote string
		lines          []string
		want           string
	}{
		{"", "203.0.113.7:1", []string{"1.2.3.4"}, "ip4:203.0.113.7"},
		{"x-forwarded-for", "203.0.113.7:1", []string{"1.2.3.4"}, "ip4:203.0.113.7"}, // not a proxy: header ignored
		{"x-forwarded-for", "10.0.0.1:1", []string{"6.6.6.6, 1.2.3.4", "10.0.0.2"}, "ip4:1.2.3.4"},
		{"X-Forwarded-For", "10.0.0.1:1", nil, "ip4:10.0.0.1"},
		{"forwarded", "10.0.0.1:1", []string{`for="[2001:db8::1]:80"`}, "ip6:2001:db8::/64"},
		{"x-real-ip", "10.0.0.1:1", []string{"9.9.9.9", "1.2.3.4"}, "ip4:1.2.3.4"},
	} {
		trusted := proxies
		if tt.header == "" {
			trusted = nil
		}
		r, err := clientip.New(trusted, tt.header, 0, false)
		if err != nil {
			t.Fatalf("%s: %v", tt.header, err)
		}
		if got, err := r.Key(tt.remote, tt.lines); err != nil || got != tt.want {
			t.Errorf("%s from %s with %q: %q, %v; want %q", tt.header, tt.remote, tt.lines, got, err, tt.want)
		}
	}
	if _, err := clientip.New(proxies, "x-client-ip", 0, false); err == nil {
		t.Error("an unknown header was accepted")
	}
	r, _ := clientip.New(nil, "", 0, false)
	for _, remote := range []string{"not-an-address", "@", "", "/run/app.sock"} {
		if _, err := r.Key(remote, nil); !errors.Is(err, clientip.ErrRemoteNotIP) {
			t.Errorf("remote address %q: %v, want ErrRemoteNotIP", remote, err)
		}
	}
}
