package memory

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/internal/keyspace"
)

// A limiter's storage key hashes alike from its parts and built; the
// table finds its entry from the parts exactly when it holds the built
// key, and never an entry of another key.
func TestHashAndFindByParts(t *testing.T) {
	h := newHasher()
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]byte("ab%{}27BD:"))
		str := func(min int, name string) string {
			return string(rapid.SliceOfN(alphabet, min, 12).Draw(t, name))
		}
		prefix := rapid.SampledFrom([]string{"", "p:", "rk:tb:"}).Draw(t, "prefix")
		key := str(1, "key")
		skey := keyspace.Key(prefix, key, "")
		full, shard := h.key(skey)
		if got := mix(h.prefix(prefix), h.tag(key), h.none); got != full {
			t.Fatalf("parts(%q, %q) = %x, key(%q) = %x", prefix, key, got, skey, full)
		}
		if shard != h.tag(key) {
			t.Fatalf("key(%q) shards by %x, not by its tag's hash %x", skey, shard, h.tag(key))
		}
		// With few hashes, entries share them, as keys of one hash would.
		few := rapid.Bool().Draw(t, "few hashes")
		hashOf := func(k string) uint64 {
			if few {
				return uint64(len(k) % 2)
			}
			full, _ := h.key(k)
			return full
		}
		var tb table
		stored := []string{str(0, "other") + "{" + str(0, "tag") + "}" + str(0, "suffix"), keyspace.Key(prefix, str(1, "other key"), "")}
		if rapid.Bool().Draw(t, "store key") {
			stored = append(stored, skey)
		}
		for _, k := range stored {
			if tb.find(hashOf(k), k) == nil {
				tb.insert(hashOf(k), k)
			}
		}
		e, sure := tb.findParts(hashOf(skey), prefix, key)
		if !sure {
			e = tb.find(hashOf(skey), skey)
		}
		if want := tb.find(hashOf(skey), skey); e != want {
			t.Fatalf("findParts(%q, %q) found %v, find(%q) %v", prefix, key, e, skey, want)
		}
	})
}
