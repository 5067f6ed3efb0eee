// Package keyspace names the storage keys of ratekit limiters and clears
// them.
//
// A storage key is prefix + "{" + escaped user key + "}" + suffix. The braces
// are a Redis Cluster hash tag, so every key of one user key lands in one
// slot and a multi-key script never fails with CROSSSLOT. The user key is
// escaped ('%' as %25, '{' as %7B, '}' as %7D), so a user key holding braces
// cannot move the hash tag, and distinct user keys always give distinct
// storage keys. A prefix must not hold braces: it is validated by [CheckPrefix].
package keyspace

import (
	"fmt"
	"strings"

	"github.com/ratekit/ratekit/core"
)

// CheckPrefix reports an error wrapping core.ErrInvalidConfig when prefix
// cannot be used.
func CheckPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("%w: Prefix %q must not contain '{' or '}' (ratekit places the hash tag itself)", core.ErrInvalidConfig, prefix)
	}
	return nil
}

// CheckKey reports an error wrapping core.ErrInvalidKey when key cannot be
// used.
func CheckKey(key string) error {
	if key == "" || len(key) > core.MaxKeyLen {
		return keyError(key) // out of line: CheckKey inlines
	}
	return nil
}

//go:noinline
func keyError(key string) error {
	if key == "" {
		return fmt.Errorf("%w: key is empty", core.ErrInvalidKey)
	}
	if len(key) > core.MaxKeyLen {
		return fmt.Errorf("%w: key is %d bytes, longer than core.MaxKeyLen (%d)", core.ErrInvalidKey, len(key), core.MaxKeyLen)
	}
	return nil
}

// Key returns the storage key for a user key. The result is injective in
// (prefix, key, suffix) for prefixes without braces.
func Key(prefix, key, suffix string) string {
	if !strings.ContainsAny(key, "%{}") {
		return prefix + "{" + key + "}" + suffix
	}
	return string(AppendKey(make([]byte, 0, len(prefix)+len(key)+len(suffix)+8), prefix, key, suffix))
}

// AppendKey appends Key(prefix, key, suffix) to dst.
func AppendKey(dst []byte, prefix, key, suffix string) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, '{')
	if !needsEscape(key) {
		// Most keys: a check eight bytes at a time, then one copy.
		dst = append(dst, key...)
		dst = append(dst, '}')
		return append(dst, suffix...)
	}
	for {
		// Copy the runs between escaped bytes whole: most keys have none.
		i := 0
		for i < len(key) && key[i] != '%' && key[i] != '{' && key[i] != '}' {
			i++
		}
		if i == len(key) {
			dst = append(dst, key...)
			break
		}
		dst = append(dst, key[:i]...)
		switch key[i] {
		case '%':
			dst = append(dst, "%25"...)
		case '{':
			dst = append(dst, "%7B"...)
		default:
			dst = append(dst, "%7D"...)
		}
		key = key[i+1:]
	}
	dst = append(dst, '}')
	return append(dst, suffix...)
}

// Tag returns the Redis Cluster hash tag of a storage key: the part between
// the first '{' and the next '}', when that part is not empty; otherwise
// the whole key. It is how Redis picks a key's slot.
func Tag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// needsEscape reports whether key holds a byte AppendKey escapes ('%',
// '{' or '}'), eight bytes at a time: a word x has a zero byte exactly
// when (x - 0x0101..) & ^x & 0x8080.. is not zero, and x is the word XOR
// the escaped byte repeated.
func needsEscape(key string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	has := func(x uint64) bool {
		x1, x2, x3 := x^('%'*ones), x^('{'*ones), x^('}'*ones)
		return ((x1-ones)&^x1|(x2-ones)&^x2|(x3-ones)&^x3)&highs != 0
	}
	i := 0
	for ; i+8 <= len(key); i += 8 {
		k := key[i : i+8]
		w := uint64(k[0]) | uint64(k[1])<<8 | uint64(k[2])<<16 | uint64(k[3])<<24 |
			uint64(k[4])<<32 | uint64(k[5])<<40 | uint64(k[6])<<48 | uint64(k[7])<<56
		if has(w) {
			return true
		}
	}
	for ; i < len(key); i++ {
		if c := key[i]; c == '%' || c == '{' || c == '}' {
			return true
		}
	}
	return false
}
