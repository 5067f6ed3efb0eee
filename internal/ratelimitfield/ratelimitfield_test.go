package ratelimitfield_test

import (
	"testing"
	"time"

	"github.com/ratekit/ratekit/internal/ratelimitfield"
)

func TestFields(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{ratelimitfield.Policy("api", 100, time.Minute), `"api";q=100;w=60`},
		{ratelimitfield.Policy("api", 100, 0), `"api";q=100`},
		{ratelimitfield.Policy(`a"b\c`, 1, 1500*time.Millisecond), `"a\"b\\c";q=1;w=2`},
		{ratelimitfield.State("api", 42, 16*time.Second+time.Nanosecond), `"api";r=42;t=17`},
		{ratelimitfield.State("api", -3, 0), `"api";r=0;t=0`},
	} {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
	}
	for d, want := range map[time.Duration]int64{0: 1, time.Nanosecond: 1, time.Second: 1, time.Second + 1: 2, -time.Second: 1} {
		if got := ratelimitfield.RetryAfter(d); got != want {
			t.Errorf("RetryAfter(%v) = %d, want %d", d, got, want)
		}
	}
}
