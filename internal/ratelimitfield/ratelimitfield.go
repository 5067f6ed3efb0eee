// Package ratelimitfield writes the rate-limit fields of the IETF draft
// "RateLimit header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-10),
// which httplimit sends as HTTP headers and grpclimit as gRPC metadata:
//
//	RateLimit-Policy: "api";q=100;w=60
//	RateLimit: "api";r=42;t=17
//	Retry-After: 3
package ratelimitfield

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The field names, as HTTP writes them; gRPC metadata keys are their
// lower case.
const (
	PolicyName     = "RateLimit-Policy"
	StateName      = "RateLimit"
	RetryAfterName = "Retry-After"
)

// Policy is one RateLimit-Policy list item: "name";q=limit, with ;w=window
// in whole seconds (rounded up) when window is positive.
func Policy(name string, limit int64, window time.Duration) string {
	s := quote(name) + ";q=" + strconv.FormatInt(limit, 10)
	if window > 0 {
		s += ";w=" + strconv.FormatInt(CeilSeconds(window), 10)
	}
	return s
}

// State is one RateLimit list item: "name";r=remaining;t=reset, the
// remaining quota (never below 0) and the seconds until the limit is back
// to full (rounded up).
func State(name string, remaining int64, resetAfter time.Duration) string {
	return quote(name) + ";r=" + strconv.FormatInt(max(remaining, 0), 10) + ";t=" + strconv.FormatInt(CeilSeconds(resetAfter), 10)
}

// RetryAfter is Retry-After's value for a denial: whole seconds, rounded
// up and never 0, so that a client that waits it is not denied again for
// waiting too little.
func RetryAfter(d time.Duration) int64 { return max(CeilSeconds(d), 1) }

// CeilSeconds is d in whole seconds, rounded up; 0 for d <= 0.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// DefaultName names a policy its configuration leaves unnamed.
const DefaultName = "default"

// CheckName returns why name cannot name a policy in the fields, or nil:
// a Structured Field string holds printable ASCII only (RFC 8941), and a
// name is at most 64 bytes.
func CheckName(name string) error {
	if len(name) > 64 {
		return errors.New("longer than 64 bytes")
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return fmt.Errorf("byte %#x is not printable ASCII", name[i])
		}
	}
	return nil
}

// Names checks the policies of one middleware in order (Check), and
// remembers their names: no two may share one, since a client tells the
// fields' items apart by name.
type Names map[string]bool

// Check checks Policies[i] of a configuration, its name (an empty name
// becomes DefaultName) and its window (not negative), and returns an
// error that names the field.
func (seen Names) Check(i int, name *string, window time.Duration) error {
	if *name == "" {
		*name = DefaultName
	}
	if err := CheckName(*name); err != nil {
		return fmt.Errorf("Policies[%d].Name: %w", i, err)
	}
	if seen[*name] {
		return fmt.Errorf("Policies[%d].Name %q is used twice", i, *name)
	}
	seen[*name] = true
	if window < 0 {
		return fmt.Errorf("Policies[%d].Window is negative", i)
	}
	return nil
}

// quote quotes s as a Structured Field string (RFC 8941).
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
