package slot

import (
	"errors"
	"strings"
	"testing"
)

// Slots from the Redis documentation of CLUSTER KEYSLOT and MOVED replies.
func TestOf(t *testing.T) {
	for key, want := range map[string]int{
		"somekey":       11058,
		"foo{hash_tag}": 2515,
		"bar{hash_tag}": 2515,
		"foo":           12182,
		"{}foo":         Of("{}foo"), // empty tag: the whole key
	} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
	if Of("{}foo") == Of("{}bar") && Of("{}foo") == Of("foo") {
		t.Error("an empty tag must hash the whole key")
	}
}

func TestSame(t *testing.T) {
	if !Same(nil) || !Same([]string{"a"}) || !Same([]string{"x{t}1", "y{t}2"}) {
		t.Error("keys with one tag are in one slot")
	}
	if Same([]string{"foo", "somekey"}) {
		t.Error("foo and somekey are in different slots")
	}
}

func TestCheck(t *testing.T) {
	if err := Check(nil); err != nil {
		t.Errorf("no keys: %v", err)
	}
	if err := Check([]string{"x{t}1", "y{t}2"}); err != nil {
		t.Errorf("one tag: %v", err)
	}
	err := Check([]string{"p:{a}", "p:{b}"})
	if !errors.Is(err, ErrCrossSlot) || !strings.Contains(err.Error(), `"p:{b}"`) {
		t.Errorf("two slots: %v; want ErrCrossSlot naming the keys", err)
	}
}
