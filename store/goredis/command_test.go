package goredisstore

import (
	"strings"
	"testing"
	"unsafe"
)

// TestCommandCopiesKeys: a limiter builds keys in a buffer it reuses, and
// go-redis may hold a command after its call, so a command must hold
// copies, short or long, in a frame or, for a command too large for one,
// in a slice of its own.
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

func TestLargeCommandCopiesKeys(t *testing.T) {
	bufs := make([][]byte, maxKeys+1)
	keys := make([]string, len(bufs))
	for i := range bufs {
		bufs[i] = []byte("rk:{k}" + strings.Repeat("x", i))
		keys[i] = unsafe.String(&bufs[i][0], len(bufs[i]))
	}
	a := command("eval", "lua", keys, []int64{7})
	for _, b := range bufs {
		copy(b, strings.Repeat("X", len(b)))
	}
	if len(a) != 3+len(keys)+1 || a[0] != "eval" || a[1] != "lua" || a[2] != len(keys) || a[len(a)-1] != int64(7) {
		t.Fatalf("command %v", a)
	}
	for i := range keys {
		if want := "rk:{k}" + strings.Repeat("x", i); a[3+i] != want {
			t.Errorf("key %d = %v after the caller's buffer changed, want %q", i, a[3+i], want)
		}
	}
}
