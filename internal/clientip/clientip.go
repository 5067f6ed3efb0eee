// Package clientip finds the address of the client behind a request: the
// connection's remote address, unless that address is a trusted proxy;
// then the address the proxies report in the one header they set,
// walked from the right past the trusted hops. httplimit (HTTP headers) and
// grpclimit (gRPC metadata) share it, so that both believe the same hops,
// and share through it the other way to tell clients apart: by the one
// value of a header or metadata key ([Value]), bounded alike.
package clientip

import (
	"errors"
	"fmt"
	"iter"
	"net/netip"
	"slices"
	"strings"
)

// Kind is the header trusted proxies report the client in.
type Kind int

const (
	// None: no header is read; the remote address is the client.
	None Kind = iota
	// XForwardedFor is X-Forwarded-For: a comma-separated list to which
	// each proxy appends the address it received the request from.
	XForwardedFor
	// Forwarded is RFC 7239's Forwarded, whose elements' for= parameters
	// are appended the same way.
	Forwarded
	// XRealIP is X-Real-IP: one address, set by the nearest proxy.
	XRealIP
)

// ParseKind returns the Kind a header name (case-insensitive) names:
// "" is None; X-Forwarded-For, Forwarded and X-Real-IP are the others.
func ParseKind(name string) (Kind, bool) {
	switch strings.ToLower(name) {
	case "":
		return None, true
	case "x-forwarded-for":
		return XForwardedFor, true
	case "forwarded":
		return Forwarded, true
	case "x-real-ip":
		return XRealIP, true
	}
	return None, false
}

// ErrRemoteNotIP is the error, wrapped, of a remote address that is not an
// IP address: a connection over a unix socket, or another listener without
// IP addresses. No client chooses its remote address, so it is the
// server's mistake (it keys by address where there is none), not the
// client's.
var ErrRemoteNotIP = errors.New("the connection's remote address is not an IP address, so ClientIP cannot key it: key by something else")

// Resolver finds client addresses with checked settings.
type Resolver struct {
	trusted []netip.Prefix
	kind    Kind
	bits    int
}

// New checks the settings of a ClientIP (httplimit's, grpclimit's): the
// trusted proxies, the header they set (a name ParseKind knows) and the
// IPv6 prefix that groups clients (0 means 64). Errors name the ClientIP
// field. own makes the Resolver keep its own copy of trusted.
func New(trusted []netip.Prefix, header string, ipv6Prefix int, own bool) (*Resolver, error) {
	bits := ipv6Prefix
	if bits == 0 {
		bits = 64
	}
	if bits < 1 || bits > 128 {
		return nil, fmt.Errorf("ClientIP.IPv6Prefix %d is not between 1 and 128", ipv6Prefix)
	}
	for i, p := range trusted {
		if !p.IsValid() {
			return nil, fmt.Errorf("ClientIP.TrustedProxies[%d] is not a valid prefix", i)
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("ClientIP.TrustedProxies[%d] %s is an IPv4-mapped IPv6 prefix, which matches no client: write it as IPv4", i, p)
		}
	}
	kind, ok := ParseKind(header)
	switch {
	case !ok:
		return nil, fmt.Errorf("ClientIP.Header %q is not X-Forwarded-For, Forwarded or X-Real-IP", header)
	case kind == None && len(trusted) > 0:
		return nil, errors.New("ClientIP.Header is empty: name the header the TrustedProxies set (XForwardedFor, Forwarded or XRealIP)")
	case kind != None && len(trusted) == 0:
		return nil, fmt.Errorf("ClientIP.Header is %s but TrustedProxies is empty: no proxy is trusted to set it", header)
	}
	if own {
		trusted = slices.Clone(trusted)
	}
	return &Resolver{trusted: trusted, kind: kind, bits: bits}, nil
}

// Kind returns the header the Resolver reads.
func (r *Resolver) Kind() Kind { return r.kind }

// Key returns the key of the client behind a connection from remote (an
// address with or without a port) whose request carries lines, every
// line of the header r reads, in order: "ip4:a.b.c.d" for an IPv4 client,
// "ip6:prefix/len" for an IPv6 one. lines are read only when remote is a
// trusted proxy. A remote address that is not an IP address is an error
// wrapping ErrRemoteNotIP.
func (r *Resolver) Key(remote string, lines []string) (string, error) {
	addr, err := r.client(remote, lines)
	if err != nil {
		return "", err
	}
	if addr.Is4() {
		return "ip4:" + addr.String(), nil
	}
	p, err := addr.Prefix(r.bits)
	if err != nil {
		return "", err
	}
	return "ip6:" + p.String(), nil
}

func (r *Resolver) client(remoteAddr string, lines []string) (netip.Addr, error) {
	remote, err := parseHost(remoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("remote address %q: %w (%w)", remoteAddr, ErrRemoteNotIP, err)
	}
	if !r.isTrusted(remote) {
		return remote, nil
	}
	if r.kind == XRealIP {
		// One address, which the nearest proxy sets. Were there several
		// lines, the last is the one a proxy added.
		if len(lines) > 0 {
			if a, err := parseHost(trimOWS(lines[len(lines)-1])); err == nil {
				return a, nil
			}
		}
		return remote, nil
	}
	client := remote
	for elem := range elementsFromRight(lines) {
		if elem == "" {
			continue // an empty list element counts for nothing (RFC 9110, section 5.6.1)
		}
		var a netip.Addr
		if r.kind == Forwarded {
			a, err = forwardedFor(elem)
		} else {
			a, err = parseHost(elem)
		}
		if err != nil {
			break // a hop we cannot read: keep the last one we could
		}
		client = a
		if !r.isTrusted(a) {
			break
		}
	}
	return client, nil
}

func (r *Resolver) isTrusted(a netip.Addr) bool {
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// elementsFromRight yields the comma-separated elements of a header's
// lines, trimmed, the last element of the last line first.
//
// A comma inside a quoted string splits it too. For the headers read here
// that is harmless: no address, port or obfuscated identifier contains a
// comma, so such an element is garbage whichever way it is split; and a
// client's unbalanced quote cannot swallow the elements proxies append
// after it.
func elementsFromRight(lines []string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := len(lines) - 1; i >= 0; i-- {
			line := lines[i]
			for {
				j := strings.LastIndexByte(line, ',')
				if !yield(trimOWS(line[j+1:])) {
					return
				}
				if j < 0 {
					break
				}
				line = line[:j]
			}
		}
	}
}

func trimOWS(s string) string { return strings.Trim(s, " \t") }

var errObfuscated = errors.New("obfuscated or unknown node")

// forwardedFor returns the address in the for= parameter of one element
// of a Forwarded header (RFC 7239): an element without exactly one for=,
// or whose node is not an IP address, is an error.
func forwardedFor(elem string) (netip.Addr, error) {
	var node string
	found := false
	for pair := range strings.SplitSeq(elem, ";") {
		pair = trimOWS(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return netip.Addr{}, fmt.Errorf("forwarded pair %q has no '='", pair)
		}
		if strings.EqualFold(k, "for") {
			if found {
				return netip.Addr{}, errors.New("for= appears twice in one element")
			}
			node, found = v, true
		}
	}
	if !found {
		return netip.Addr{}, errors.New("element has no for=")
	}
	return parseNode(node)
}

// parseNode parses a Forwarded node (RFC 7239, section 6), quoted or not:
// an IPv4 address or a bracketed IPv6 address, each with an optional port
// or obfuscated port. "unknown" and obfuscated identifiers ("_hidden") are
// errors: they name no address.
func parseNode(v string) (netip.Addr, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if strings.ContainsAny(v, `"\`) {
		return netip.Addr{}, fmt.Errorf("node %q is malformed", v)
	}
	if strings.EqualFold(v, "unknown") || strings.HasPrefix(v, "_") {
		return netip.Addr{}, errObfuscated
	}
	var host, port string
	var hasPort, v6 bool
	if rest, ok := strings.CutPrefix(v, "["); ok {
		var tail string
		host, tail, ok = strings.Cut(rest, "]")
		if !ok {
			return netip.Addr{}, fmt.Errorf("node %q has no closing bracket", v)
		}
		if tail != "" {
			if port, hasPort = strings.CutPrefix(tail, ":"); !hasPort {
				return netip.Addr{}, fmt.Errorf("node %q: junk after the address", v)
			}
		}
		v6 = true
	} else {
		host, port, hasPort = strings.Cut(v, ":")
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, err
	}
	if a.Is6() != v6 {
		return netip.Addr{}, fmt.Errorf("node %q: an IPv6 address must be in brackets, an IPv4 address must not", v)
	}
	if hasPort && !validNodePort(port) {
		return netip.Addr{}, fmt.Errorf("node %q: bad port", v)
	}
	return a.WithZone("").Unmap(), nil
}

// validNodePort reports whether s is a node-port: 1 to 5 digits, or "_"
// and at least one of ALPHA, DIGIT, ".", "_", "-".
func validNodePort(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '_' {
		if len(s) == 1 {
			return false
		}
		for i := 1; i < len(s); i++ {
			b := s[i]
			if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '.' || b == '_' || b == '-') {
				return false
			}
		}
		return true
	}
	if len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseHost parses "1.2.3.4", "1.2.3.4:80", "::1", "[::1]" or "[::1]:80".
func parseHost(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, errors.New("empty address")
	}
	var a netip.Addr
	if ap, err := netip.ParseAddrPort(s); err == nil {
		a = ap.Addr()
	} else {
		bracketed := len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']'
		if bracketed {
			s = s[1 : len(s)-1]
		}
		if a, err = netip.ParseAddr(s); err != nil {
			return netip.Addr{}, err
		}
		if bracketed && !a.Is6() {
			return netip.Addr{}, fmt.Errorf("%q: an IPv4 address in brackets", s)
		}
	}
	return a.WithZone("").Unmap(), nil
}
