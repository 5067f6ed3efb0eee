package httplimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP keys requests by client address.
type ClientIP struct {
	// TrustedProxies are the proxies whose Forwarded / X-Forwarded-For
	// headers are believed. Empty: the remote address is the client.
	TrustedProxies []netip.Prefix
	// IPv6Prefix groups IPv6 clients: 0 means 64; 128 keys every address
	// apart. IPv4 clients are keyed by their whole address.
	IPv6Prefix int
}

// Key returns "ip4:a.b.c.d" or "ip6:prefix/len" for r's client.
func (c ClientIP) Key(r *http.Request) (string, error) {
	bits := c.IPv6Prefix
	if bits == 0 {
		bits = 64
	}
	if bits < 1 || bits > 128 {
		return "", fmt.Errorf("ClientIP.IPv6Prefix %d is not between 1 and 128", c.IPv6Prefix)
	}
	addr, err := c.client(r)
	if err != nil {
		return "", err
	}
	if addr.Is4() {
		return "ip4:" + addr.String(), nil
	}
	p, err := addr.WithZone("").Prefix(bits)
	if err != nil {
		return "", err
	}
	return "ip6:" + p.String(), nil
}

func (c ClientIP) client(r *http.Request) (netip.Addr, error) {
	remote, err := parseHost(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("remote address %q: %w", r.RemoteAddr, err)
	}
	if !c.trusted(remote) {
		return remote, nil
	}
	hops := forwardedFor(r)
	client := remote
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := parseHost(hops[i])
		if err != nil {
			break // garbage from a hop we cannot vouch for: keep the last good one
		}
		client = a
		if !c.trusted(a) {
			break
		}
	}
	return client, nil
}

func (c ClientIP) trusted(a netip.Addr) bool {
	for _, p := range c.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedFor returns the client addresses proxies reported, oldest
// first: the for= values of Forwarded (RFC 7239) when present, otherwise
// X-Forwarded-For.
func forwardedFor(r *http.Request) []string {
	var hops []string
	for _, line := range r.Header.Values("Forwarded") {
		for _, elem := range strings.Split(line, ",") {
			for _, pair := range strings.Split(elem, ";") {
				k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					hops = append(hops, strings.Trim(v, `"`))
				}
			}
		}
	}
	if len(hops) > 0 {
		return hops
	}
	for _, line := range r.Header.Values("X-Forwarded-For") {
		for _, h := range strings.Split(line, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	return hops
}

// parseHost parses "1.2.3.4", "1.2.3.4:80", "::1", "[::1]:80" or "[::1]".
func parseHost(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, errors.New("empty address")
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	return a.Unmap(), nil
}

// Header keys requests by the value of a request header, for example an
// API key. A missing or empty header is an error (400).
func Header(name string) KeyFunc {
	return func(r *http.Request) (string, error) {
		v := r.Header.Get(name)
		if v == "" {
			return "", fmt.Errorf("header %s is missing", name)
		}
		return "h:" + v, nil
	}
}
