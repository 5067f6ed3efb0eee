package memory

import (
	"hash/maphash"
	"strings"
)

// hasher hashes storage keys so that a limiter's in-process call can hash
// its key from the prefix and the user key, without building the storage
// key (keyspace.Key: prefix + "{" + escaped key + "}"): a key of the form
// P{T}S (T the first brace pair's content, not empty) hashes as its three
// parts, T unescaped; any other key as itself. Both hash a limiter's key
// alike, whichever path decides.
type hasher struct {
	seed maphash.Seed
	none uint64 // the hash of the empty suffix
}

func newHasher() hasher {
	seed := maphash.MakeSeed()
	return hasher{seed: seed, none: maphash.String(seed, "")}
}

// key returns the hash of the storage key k, and the hash that picks its
// shard: its hash tag's, so that every key of one user key lives in one
// shard (tag).
func (h *hasher) key(k string) (full, shard uint64) {
	p, t, s, ok := split(k)
	if !ok {
		full = maphash.String(h.seed, k)
		return full, full
	}
	th := uint64(0)
	if strings.IndexByte(t, '%') < 0 {
		th = maphash.String(h.seed, t)
	} else {
		var buf [128]byte
		th = maphash.Bytes(h.seed, unescape(buf[:0], t))
	}
	sh := h.none
	if s != "" {
		sh = maphash.String(h.seed, s)
	}
	return mix(maphash.String(h.seed, p), th, sh), th
}

// tag returns the hash of a user key as a storage key's hash tag: the
// hash that picks the shard of every storage key of that user key.
func (h *hasher) tag(key string) uint64 { return maphash.String(h.seed, key) }

// prefix returns the hash of a key prefix, which parts takes.
func (h *hasher) prefix(prefix string) uint64 { return maphash.String(h.seed, prefix) }

func mix(p, t, s uint64) uint64 {
	return (p*0x9E3779B97F4A7C15^t)*0xC2B2AE3D27D4EB4F ^ s
}

// split splits k as P{T}S: T from the first '{' to the next '}', not
// empty (keyspace.Tag's hash tag).
func split(k string) (p, t, s string, ok bool) {
	i := strings.IndexByte(k, '{')
	if i < 0 {
		return "", "", "", false
	}
	j := strings.IndexByte(k[i+1:], '}')
	if j <= 0 {
		return "", "", "", false
	}
	return k[:i], k[i+1 : i+1+j], k[i+2+j:], true
}

// unescape appends t to dst with keyspace's escapes (%25, %7B, %7D)
// undone; any other '%' stays.
func unescape(dst []byte, t string) []byte {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == '%' && i+2 < len(t) {
			switch t[i+1 : i+3] {
			case "25":
				c, i = '%', i+2
			case "7B":
				c, i = '{', i+2
			case "7D":
				c, i = '}', i+2
			}
		}
		dst = append(dst, c)
	}
	return dst
}

// plainAt returns, for a key P{T} whose T needs no escape and which ends
// with its hash tag, the length of P; -1 for any other key. An entry
// keeps it, so that an in-process call compares (prefix, key) with the
// entry's key without building its own (table.findParts).
func plainAt(k string) int {
	p, t, s, ok := split(k)
	if !ok || s != "" || strings.ContainsAny(t, "%{") {
		return -1
	}
	return len(p)
}
