package clientip

import (
	"errors"
	"fmt"

	"github.com/ratekit/ratekit/core"
)

// DefaultMaxLen bounds, by default, the value a request is keyed by when
// it is keyed by a header (httplimit.Header) or a metadata key
// (grpclimit.Metadata) rather than by address.
const DefaultMaxLen = 256

// CheckMaxLen returns why maxLen cannot bound a key value, or nil: it is
// between 0 (DefaultMaxLen) and core.MaxKeyLen minus the length of the
// prefix the key puts before the value (a longer value would pass here
// and be refused as a key). field names the setting.
func CheckMaxLen(field string, maxLen int, prefix string) error {
	if top := core.MaxKeyLen - len(prefix); maxLen < 0 || maxLen > top {
		return fmt.Errorf("%s %d is not between 0 and %d (core.MaxKeyLen less the key's prefix %q)", field, maxLen, top, prefix)
	}
	return nil
}

// Value returns the one value of vs, every line the client sent of the
// header or metadata key name (kind says which, for the error), or why it
// cannot key the request: none or an empty one, several (which of them a
// proxy, a client library or the client wrote is not known, and choosing
// one would let the client add another to pick its key), or one longer
// than maxLen bytes (0 means DefaultMaxLen). The value is the client's to
// write: these bounds are what keep it from choosing a key of any length
// or form. The error is the client's.
func Value(kind, name string, vs []string, maxLen int) (string, error) {
	if maxLen == 0 {
		maxLen = DefaultMaxLen
	}
	switch {
	case len(vs) == 0 || len(vs) == 1 && vs[0] == "":
		return "", fmt.Errorf("%w: %s %s is missing", core.ErrInvalidKey, kind, name)
	case len(vs) > 1:
		return "", fmt.Errorf("%w: %s %s has %d values, want one", core.ErrInvalidKey, kind, name, len(vs))
	case len(vs[0]) > maxLen:
		return "", fmt.Errorf("%w: %s %s is %d bytes, longer than %d", core.ErrInvalidKey, kind, name, len(vs[0]), maxLen)
	}
	return vs[0], nil
}

// CheckHeaderName returns why name cannot name an HTTP header, or nil: it
// is a token of RFC 9110 (section 5.1), not empty.
func CheckHeaderName(name string) error {
	if name == "" {
		return errors.New("the header name is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTchar(name[i]) {
			return fmt.Errorf("the header name %q holds %q, which no header name may", name, name[i])
		}
	}
	return nil
}

// isTchar reports whether c may be in a token (RFC 9110, section 5.6.2).
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
