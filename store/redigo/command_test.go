package redigostore

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
)

// A limiter builds keys in a buffer it reuses, and redigo may still be
// writing a command after its call's context ended: a command's
// arguments hold copies of its keys.
func TestArgsCopyKeys(t *testing.T) {
	buf := []byte("rk:tb:{user}")
	c := scriptproto.Cmd{Name: scriptproto.EvalSHA, Script: core.NewScript("s", "return {1}", nil, false), Keys: []string{unsafe.String(&buf[0], len(buf)), ""}, Args: []int64{-1}}
	a := args(c)
	copy(buf, "XXXXXXXXXXXX")
	if got, want := fmt.Sprint(a[1:]), "[2 rk:tb:{user}  -1]"; got != want || a[0] != c.Script.SHA1() {
		t.Errorf("args after the caller's key buffer changed: %v, want [sha1 %s]", a, want)
	}
}
