package httplimit

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/clientip"
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
// New and Concurrency check the settings of a ClientIP given as their
// Key, and refuse bad ones with an error wrapping core.ErrInvalidConfig
// that names the field.
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

// ErrRemoteNotIP is wrapped by ClientIP's error for a request whose
// remote address is not an IP address: the server listens on a unix
// socket, or on another listener without IP addresses, where ClientIP
// cannot tell clients apart. It is the server's mistake: the middleware
// answers 500 and logs it at slog.LevelError (paced, as store errors are),
// where a client's bad key is answered 400.
var ErrRemoteNotIP = clientip.ErrRemoteNotIP

// Key returns r's key. A ClientIP with bad settings returns an error
// wrapping core.ErrInvalidConfig; a remote address that is not an IP
// address, one wrapping ErrRemoteNotIP.
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
	r, err := clientip.New(c.TrustedProxies, string(c.Header), c.IPv6Prefix, own)
	if err != nil {
		return nil, err
	}
	return &clientIP{r: r, header: headerNames[r.Kind()]}, nil
}

// headerNames are the headers a clientip.Kind reads.
var headerNames = map[clientip.Kind]string{
	clientip.XForwardedFor: string(XForwardedFor),
	clientip.Forwarded:     string(Forwarded),
	clientip.XRealIP:       string(XRealIP),
}

// clientIP is a ClientIP whose settings have been checked.
type clientIP struct {
	r      *clientip.Resolver
	header string // "" when none is read
}

func (c *clientIP) Key(r *http.Request) (string, error) {
	var lines []string
	if c.header != "" {
		lines = r.Header.Values(c.header)
	}
	return c.r.Key(r.RemoteAddr, lines)
}

// DefaultMaxLen is HeaderKey.MaxLen when it is 0: 256 bytes, as for
// grpclimit.Metadata.
const DefaultMaxLen = clientip.DefaultMaxLen

// HeaderKey is a Keyer that keys requests by the value of one request
// header, for example an API key or a tenant id: "h:" and the value. The
// value is the client's to write, so it is bounded as grpclimit.Metadata
// bounds a metadata value (the same code): a request without the header,
// with an empty value, with several lines of it (which one a proxy wrote
// is not known, and choosing one would let the client add another to
// pick its key), or with one longer than MaxLen bytes answers 400. Only
// key by a header that your own authentication has checked, or that a
// client gains nothing by changing. New refuses bad settings with
// core.ErrInvalidConfig.
type HeaderKey struct {
	// Name is the header's name (case-insensitive), a token of RFC 9110;
	// it must not be empty.
	Name string
	// MaxLen bounds the value's length in bytes; 0 means DefaultMaxLen, at
	// most core.MaxKeyLen-2 (the key is "h:" and the value).
	MaxLen int
}

// Header returns HeaderKey{Name: name}: requests keyed by the one value
// of header name, at most DefaultMaxLen bytes.
func Header(name string) HeaderKey { return HeaderKey{Name: name} }

// Key returns "h:" and the value of header k.Name. A HeaderKey with bad
// settings returns an error wrapping core.ErrInvalidConfig.
func (k HeaderKey) Key(r *http.Request) (string, error) {
	if err := k.check(); err != nil {
		return "", fmt.Errorf("%w: httplimit: %w", core.ErrInvalidConfig, err)
	}
	v, err := clientip.Value("header", k.Name, r.Header.Values(k.Name), k.MaxLen)
	if err != nil {
		return "", err
	}
	return "h:" + v, nil
}

func (k HeaderKey) check() error {
	if err := clientip.CheckHeaderName(k.Name); err != nil {
		return fmt.Errorf("HeaderKey.Name: %w", err)
	}
	return clientip.CheckMaxLen("HeaderKey.MaxLen", k.MaxLen, "h:")
}
