package keyspace

import (
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/ratekit/ratekit/core"
)

func TestKey(t *testing.T) {
	for _, tt := range []struct{ prefix, key, suffix, want string }{
		{"p:", "user", "", "p:{user}"},
		{"p:", "user", ":1", "p:{user}:1"},
		{"p:", "{", "", "p:{%7B}"},
		{"p:", "%7B", "", "p:{%257B}"},
		{"", "}a{", ":x", "{%7Da%7B}:x"},
	} {
		if got := Key(tt.prefix, tt.key, tt.suffix); got != tt.want {
			t.Errorf("Key(%q, %q, %q) = %q, want %q", tt.prefix, tt.key, tt.suffix, got, tt.want)
		}
	}
}

// Distinct user keys give distinct storage keys, and every storage key of
// one user key has the escaped user key as its hash tag.
func TestKeyProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([]rune{'a', '{', '}', '%', '7', 'B', 'D', '2', '5', ':', 0, 0xFFFD})
		str := rapid.StringOfN(alphabet, 1, 12, -1)
		prefix := rapid.SampledFrom([]string{"", "p:", "tenant:a:"}).Draw(t, "prefix")
		a, b := str.Draw(t, "a"), str.Draw(t, "b")
		sa, sb := rapid.SampledFrom([]string{"", ":1", ":2"}).Draw(t, "sa"), rapid.SampledFrom([]string{"", ":1", ":2"}).Draw(t, "sb")
		ka, kb := Key(prefix, a, sa), Key(prefix, b, sb)
		if (a != b || sa != sb) && ka == kb {
			t.Fatalf("(%q,%q) and (%q,%q) both map to %q", a, sa, b, sb, ka)
		}
		if Tag(ka) != Tag(Key(prefix, a, ":other")) {
			t.Fatalf("storage keys of %q have different hash tags", a)
		}
		if tag := Tag(ka); strings.ContainsAny(tag, "{}") || tag == "" {
			t.Fatalf("tag %q of %q", tag, ka)
		}
	})
}

// Invalid UTF-8 and binary keys are keys like any other.
func TestBinaryKeys(t *testing.T) {
	if Key("p:", "\xff\x00", "") != "p:{\xff\x00}" {
		t.Fatal("binary key changed")
	}
	if err := CheckKey("\xff\x00"); err != nil {
		t.Fatal(err)
	}
}

func TestChecks(t *testing.T) {
	if err := CheckKey(""); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("empty key: %v", err)
	}
	if err := CheckKey(strings.Repeat("x", core.MaxKeyLen)); err != nil {
		t.Errorf("key of MaxKeyLen: %v", err)
	}
	if err := CheckKey(strings.Repeat("x", core.MaxKeyLen+1)); !errors.Is(err, core.ErrInvalidKey) {
		t.Errorf("key over MaxKeyLen: %v", err)
	}
	for _, p := range []string{"a{", "}", "{x}"} {
		if err := CheckPrefix(p); !errors.Is(err, core.ErrInvalidConfig) || !strings.Contains(err.Error(), "Prefix") {
			t.Errorf("CheckPrefix(%q) = %v", p, err)
		}
	}
	if err := CheckPrefix("ok:prefix:"); err != nil {
		t.Error(err)
	}
}

// BenchmarkAppendKey builds a typical storage key (no byte to escape) in a
// reused buffer, as a memory-store decision does.
func BenchmarkAppendKey(b *testing.B) {
	buf := make([]byte, 0, 96)
	for b.Loop() {
		buf = AppendKey(buf[:0], "rk:tb:", "user:1234", "")
	}
}

// AppendKey's word-at-a-time check finds an escaped byte at any position
// of keys of any length, among bytes of every value.
func TestAppendKeyFindsEveryEscape(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := string(rapid.SliceOfN(rapid.OneOf(rapid.Byte(), rapid.SampledFrom([]byte("%{}"))), 1, 40).Draw(t, "key"))
		var want strings.Builder
		want.WriteString("p:{")
		for i := 0; i < len(key); i++ {
			switch c := key[i]; c {
			case '%':
				want.WriteString("%25")
			case '{':
				want.WriteString("%7B")
			case '}':
				want.WriteString("%7D")
			default:
				want.WriteByte(c)
			}
		}
		want.WriteString("}:s")
		if got := string(AppendKey(nil, "p:", key, ":s")); got != want.String() {
			t.Fatalf("AppendKey(%q) = %q, want %q", key, got, want.String())
		}
	})
}
