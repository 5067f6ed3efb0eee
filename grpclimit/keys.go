package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/clientip"
)

// Call is what a Keyer may read of a call. Everything in it but FullMethod
// comes from the client and is hostile.
type Call struct {
	// FullMethod is the method called: "/package.Service/Method".
	FullMethod string
	// Peer is the address of the connection's other end, nil when gRPC
	// does not know it.
	Peer net.Addr
	// Metadata is the call's incoming metadata, keys in lower case.
	Metadata metadata.MD
}

// Keyer returns the key a call is limited by. An error answers
// codes.InvalidArgument, except an error wrapping core.ErrInvalidConfig,
// which is the server's fault and answers codes.Internal.
type Keyer interface {
	Key(ctx context.Context, c Call) (string, error)
}

// KeyFunc is an adapter that lets an ordinary function be a Keyer.
type KeyFunc func(ctx context.Context, c Call) (string, error)

// Key returns f(ctx, c).
func (f KeyFunc) Key(ctx context.Context, c Call) (string, error) { return f(ctx, c) }

// The metadata keys trusted proxies report the client's address in, for
// ClientIP.Header: the lower-case names of the HTTP headers (Envoy and
// most gRPC-aware proxies set x-forwarded-for).
const (
	XForwardedFor = "x-forwarded-for"
	Forwarded     = "forwarded"
	XRealIP       = "x-real-ip"
)

// ClientIP is a Keyer that keys calls by client address: "ip4:a.b.c.d" for
// an IPv4 client, "ip6:prefix/len" for an IPv6 one. It reads the address
// exactly as httplimit.ClientIP does (the same code): the connection's
// remote address, unless that address is in TrustedProxies; then the
// address the proxies report in Header, the one metadata key they set,
// walked from the right past the trusted hops, so that a client can
// neither send another key nor write hops of its own to choose its key.
// IPv6 clients are grouped by IPv6Prefix (64 by default). New refuses bad
// settings with core.ErrInvalidConfig.
type ClientIP struct {
	// TrustedProxies are the addresses of the proxies in front of this
	// server. Empty: the peer address is the client and no metadata is
	// read.
	TrustedProxies []netip.Prefix
	// Header is the metadata key the TrustedProxies set: XForwardedFor,
	// Forwarded or XRealIP. Required with TrustedProxies, refused without.
	Header string
	// IPv6Prefix groups IPv6 clients: 0 means 64; 128 keys every address
	// apart. IPv4 clients are keyed by their whole address.
	IPv6Prefix int
}

// ErrRemoteNotIP is wrapped by ClientIP's error for a call whose peer
// address is not an IP address: the server listens on a unix socket, or
// on another listener without IP addresses, where ClientIP cannot tell
// clients apart. It is the server's mistake: the call is answered
// codes.Internal and the error logged at slog.LevelError (paced, as store
// errors are), where a client's bad key is InvalidArgument.
var ErrRemoteNotIP = clientip.ErrRemoteNotIP

// Key returns c's client key. A ClientIP with bad settings returns an
// error wrapping core.ErrInvalidConfig; a peer address that is not an IP
// address, one wrapping ErrRemoteNotIP; a call without a peer is an
// error too.
func (ip ClientIP) Key(ctx context.Context, c Call) (string, error) {
	p, err := ip.prepare(false)
	if err != nil {
		return "", fmt.Errorf("%w: grpclimit: %w", core.ErrInvalidConfig, err)
	}
	return p.Key(ctx, c)
}

func (ip ClientIP) prepare(own bool) (*clientIPKeyer, error) {
	r, err := clientip.New(ip.TrustedProxies, ip.Header, ip.IPv6Prefix, own)
	if err != nil {
		return nil, err
	}
	return &clientIPKeyer{r: r, header: strings.ToLower(ip.Header)}, nil
}

// clientIPKeyer is a ClientIP whose settings have been checked.
type clientIPKeyer struct {
	r      *clientip.Resolver
	header string // "" when none is read
}

func (k *clientIPKeyer) Key(_ context.Context, c Call) (string, error) {
	if c.Peer == nil {
		return "", errors.New("the call has no peer address")
	}
	var lines []string
	if k.header != "" {
		lines = c.Metadata.Get(k.header)
	}
	return k.r.Key(c.Peer.String(), lines)
}

// DefaultMaxLen is Metadata.MaxLen when it is 0: 256 bytes, as for
// httplimit.HeaderKey.
const DefaultMaxLen = clientip.DefaultMaxLen

// Metadata is a Keyer that keys calls by the value of one metadata key,
// for example an API key or a tenant id: "md:" and the value. The value is
// the client's to write, so it is bounded: a call without the key, with an
// empty value, with several values, or with one longer than MaxLen bytes
// answers codes.InvalidArgument (which of several values a proxy wrote is
// not known, and choosing one would let the client add another to pick
// its key). httplimit.HeaderKey bounds a header alike, by the same code.
// Only key by metadata that your own authentication has checked, or that
// a client gains nothing by changing.
type Metadata struct {
	// Name is the metadata key, in lower case; it must not start with
	// "grpc-", which gRPC reserves.
	Name string
	// MaxLen bounds the value's length in bytes; 0 means DefaultMaxLen, at
	// most core.MaxKeyLen-3 (the key is "md:" and the value).
	MaxLen int
}

// Key returns "md:" and the value of m.Name.
func (m Metadata) Key(_ context.Context, c Call) (string, error) {
	if err := m.check(); err != nil {
		return "", fmt.Errorf("%w: grpclimit: %w", core.ErrInvalidConfig, err)
	}
	v, err := clientip.Value("metadata", m.Name, c.Metadata.Get(m.Name), m.MaxLen)
	if err != nil {
		return "", err
	}
	return "md:" + v, nil
}

func (m Metadata) check() error {
	if m.Name == "" {
		return errors.New("Metadata.Name is empty")
	}
	if m.Name != strings.ToLower(m.Name) {
		return fmt.Errorf("Metadata.Name %q is not in lower case, as gRPC metadata keys are", m.Name)
	}
	if strings.HasPrefix(m.Name, "grpc-") {
		return fmt.Errorf("Metadata.Name %q starts with grpc-, which gRPC reserves", m.Name)
	}
	return clientip.CheckMaxLen("Metadata.MaxLen", m.MaxLen, "md:")
}

// Method is a Keyer that keys calls by the method called: "m:" and the
// full method name. With it, a limit is shared by every client of a
// method; Join it with ClientIP for a limit per client and method.
type Method struct{}

// Key returns "m:" and c.FullMethod.
func (Method) Key(_ context.Context, c Call) (string, error) { return "m:" + c.FullMethod, nil }

// Join is a Keyer whose key is made of the keys of keyers, each quoted
// (strconv.Quote), so that no choice of parts can make another's key. An
// error of any keyer is the call's.
func Join(keyers ...Keyer) Keyer { return joined(keyers) }

type joined []Keyer

func (j joined) Key(ctx context.Context, c Call) (string, error) {
	var b strings.Builder
	for i, k := range j {
		part, err := k.Key(ctx, c)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(part))
	}
	return b.String(), nil
}

// checkKeyer returns k checked and ready to use: a ClientIP or Metadata
// whose settings are good (a Join's parts too), or k itself when there is
// nothing to check.
func checkKeyer(k Keyer) (Keyer, error) {
	switch k := k.(type) {
	case nil:
		return nil, errors.New("nil")
	case KeyFunc:
		if k == nil {
			return nil, errors.New("a nil KeyFunc")
		}
	case ClientIP:
		return k.prepare(true)
	case *ClientIP:
		if k == nil {
			return nil, errors.New("a nil *ClientIP")
		}
		return k.prepare(true)
	case Metadata:
		if err := k.check(); err != nil {
			return nil, err
		}
	case *Metadata:
		if k == nil {
			return nil, errors.New("a nil *Metadata")
		}
		if err := k.check(); err != nil {
			return nil, err
		}
	case joined:
		if len(k) == 0 {
			return nil, errors.New("Join of no Keyer")
		}
		out := make(joined, len(k))
		for i, part := range k {
			p, err := checkKeyer(part)
			if err != nil {
				return nil, fmt.Errorf("Join part %d: %w", i, err)
			}
			out[i] = p
		}
		return out, nil
	}
	return k, nil
}
