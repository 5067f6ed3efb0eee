package goredisstore

import (
	"strings"
	"testing"
	"unsafe"
)

// TestCommandCopiesKeys: the limiter lends keys from a buffer it reuses
// (CopiesKeys), so a command must hold copies, short or long.
func TestCommandCopiesKeys(t *testing.T) {
	buf := []byte("rk:tb:{user}")
	short := unsafe.String(&buf[0], len(buf))
	longBuf := []byte(strings.Repeat("k", 200)) // does not fit the frame
	long := unsafe.String(&longBuf[0], len(longBuf))
	a := command("evalsha", "sha", []string{short, long, ""}, []int64{-1, 1 << 40})
	copy(buf, strings.Repeat("X", len(buf)))
	copy(longBuf, strings.Repeat("X", len(longBuf)))
	want := []string{"rk:tb:{user}", strings.Repeat("k", 200), ""}
	if a[0] != "evalsha" || *a[1].(*string) != "sha" || a[2] != 3 {
		t.Fatalf("head %v %v %v", a[0], a[1], a[2])
	}
	for i, w := range want {
		if got := *a[3+i].(*string); got != w {
			t.Errorf("key %d = %q after the caller's buffer changed, want %q", i, got, w)
		}
	}
	if *a[6].(*int64) != -1 || *a[7].(*int64) != 1<<40 || len(a) != 8 {
		t.Errorf("args %v", a[6:])
	}
}
