package core_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/core"
)

func TestNewScript(t *testing.T) {
	s := core.NewScript("n", "return 1", nil, true)
	// echo -n 'return 1' | sha1sum
	if s.SHA1() != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" {
		t.Errorf("SHA1 = %s", s.SHA1())
	}
	if s.Name() != "n" || s.Lua() != "return 1" || !s.ReadOnly() || s.Twin() != nil {
		t.Errorf("accessors: %q %q %v", s.Name(), s.Lua(), s.ReadOnly())
	}
}

func TestClockFunc(t *testing.T) {
	at := time.Unix(7, 0)
	if got := core.ClockFunc(func() time.Time { return at }).Now(); !got.Equal(at) {
		t.Errorf("Now = %v", got)
	}
}
