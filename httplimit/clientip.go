package httplimit

import (
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/ratekit/ratekit/core"
)

// ProxyHeader names the request header in which trusted proxies report the
// address of the client they received a request from.
type ProxyHeader string

// The headers a ClientIP can read. Header names are case-insensitive.
const (
	// XForwardedFor is X-Forwarded-For: a comma-separated list of
	// addresses to which each proxy appends the address it received the
	// request from (nginx's $proxy_add_x_forwarded_for, most cloud load
	// balancers).
	XForwardedFor ProxyHeader = "X-Forwarded-For"
	// Forwarded is the Forwarded header of RFC 7239, to which each proxy
	// appends an element whose for= parameter is the address it received
	// the request from: for=192.0.2.60 or for="[2001:db8::17]:4711".
	Forwarded ProxyHeader = "Forwarded"
	// XRealIP is X-Real-IP: one address, set by the proxy that connects to
	// this server, replacing any X-Real-IP the client sent (nginx's
	// proxy_set_header X-Real-IP $remote_addr).
	XRealIP ProxyHeader = "X-Real-IP"
)

// ClientIP is a Keyer that keys requests by client address: "ip4:a.b.c.d"
// for an IPv4 client, "ip6:prefix/len" for an IPv6 one.
//
// The client address is the connection's remote address, unless that
// address is in TrustedProxies. Then it is read from Header, the one header
// the trusted proxies set, and from no other: a client can write anything
// into any header, and only what the proxies add is believed.
// X-Forwarded-For and Forwarded are lists to which each proxy appends the
// address it received the request from; their lines are read as one list,
// in order, and walked from the right: each address that is a trusted
// proxy is skipped, and the client is the first address that is not one.
// An element that is missing its address, malformed or obfuscated
// (Forwarded's for=unknown or for=_hidden) stops the walk, and the client
// is the last address read before it. X-Real-IP holds one address, set by
// the nearest proxy; of several lines, the last is read.
//
// New checks the settings of a ClientIP given as Config.Key or Policy.Key
// and refuses bad ones with an error wrapping core.ErrInvalidConfig that
// names the field.
type ClientIP struct {
	// TrustedProxies are the addresses of the proxies in front of this
	// server. Empty: the remote address is the client and no header is
	// read.
	TrustedProxies []netip.Prefix
	// Header is the header that TrustedProxies set: XForwardedFor,
	// Forwarded or XRealIP. It is required with TrustedProxies, and
	// refused without them.
	Header ProxyHeader
	// IPv6Prefix groups IPv6 clients, so that one host cannot escape its
	// limit by rotating addresses: 0 means 64; 128 keys every address
	// apart. IPv4 clients are keyed by their whole address.
	IPv6Prefix int
}

// Key returns r's key. A ClientIP with bad settings returns an error
// wrapping core.ErrInvalidConfig; a remote address that is not an IP
// address is an error too.
func (c ClientIP) Key(r *http.Request) (string, error) {
	p, err := c.prepare(false)
	if err != nil {
		return "", fmt.Errorf("%w: httplimit: %w", core.ErrInvalidConfig, err)
	}
	return p.Key(r)
}

// prepare checks c's settings and returns c ready to use; own makes it
// keep its own copy of TrustedProxies.
func (c ClientIP) prepare(own bool) (*clientIP, error) {
	bits := c.IPv6Prefix
	if bits == 0 {
		bits = 64
	}
	if bits < 1 || bits > 128 {
		return nil, fmt.Errorf("ClientIP.IPv6Prefix %d is not between 1 and 128", c.IPv6Prefix)
	}
	for i, p := range c.TrustedProxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("ClientIP.TrustedProxies[%d] is not a valid prefix", i)
		}
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("ClientIP.TrustedProxies[%d] %s is an IPv4-mapped IPv6 prefix, which matches no client: write it as IPv4", i, p)
		}
	}
	var header ProxyHeader
	switch http.CanonicalHeaderKey(string(c.Header)) {
	case "":
		if len(c.TrustedProxies) > 0 {
			return nil, errors.New("ClientIP.Header is empty: name the header the TrustedProxies set (XForwardedFor, Forwarded or XRealIP)")
		}
	case "X-Forwarded-For":
		header = XForwardedFor
	case "Forwarded":
		header = Forwarded
	case "X-Real-Ip":
		header = XRealIP
	default:
		return nil, fmt.Errorf("ClientIP.Header %q is not X-Forwarded-For, Forwarded or X-Real-IP", c.Header)
	}
	if header != "" && len(c.TrustedProxies) == 0 {
		return nil, fmt.Errorf("ClientIP.Header is %s but TrustedProxies is empty: no proxy is trusted to set it", header)
	}
	trusted := c.TrustedProxies
	if own {
		trusted = slices.Clone(trusted)
	}
	return &clientIP{trusted: trusted, header: header, bits: bits}, nil
}

// clientIP is a ClientIP whose settings have been checked.
type clientIP struct {
	trusted []netip.Prefix
	header  ProxyHeader // XForwardedFor, Forwarded, XRealIP or "" (none)
	bits    int
}

func (c *clientIP) Key(r *http.Request) (string, error) {
	addr, err := c.client(r)
	if err != nil {
		return "", err
	}
	if addr.Is4() {
		return "ip4:" + addr.String(), nil
	}
	p, err := addr.Prefix(c.bits)
	if err != nil {
		return "", err
	}
	return "ip6:" + p.String(), nil
}

func (c *clientIP) client(r *http.Request) (netip.Addr, error) {
	remote, err := parseHost(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("remote address %q: %w", r.RemoteAddr, err)
	}
	if !c.isTrusted(remote) {
		return remote, nil
	}
	lines := r.Header.Values(string(c.header))
	if c.header == XRealIP {
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
		if c.header == Forwarded {
			a, err = forwardedFor(elem)
		} else {
			a, err = parseHost(elem)
		}
		if err != nil {
			break // a hop we cannot read: keep the last one we could
		}
		client = a
		if !c.isTrusted(a) {
			break
		}
	}
	return client, nil
}

func (c *clientIP) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
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
