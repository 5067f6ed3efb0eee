package ratelimitfield_test

import (
	"strings"
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

func TestNames(t *testing.T) {
	seen := ratelimitfield.Names{}
	for i, c := range []struct {
		name   string
		window time.Duration
		want   string // the name after Check, or the error
	}{
		{"", time.Minute, ratelimitfield.DefaultName},
		{"api", 0, "api"},
		{"api", time.Second, `Policies[2].Name "api" is used twice`},
		{"default", 0, `Policies[3].Name "default" is used twice`},
		{"tab\there", 0, "Policies[4].Name: byte 0x9 is not printable ASCII"},
		{strings.Repeat("n", 65), 0, "Policies[5].Name: longer than 64 bytes"},
		{strings.Repeat("n", 64), 0, strings.Repeat("n", 64)},
		{"back", -time.Second, "Policies[7].Window is negative"},
	} {
		name := c.name
		var got string
		if err := seen.Check(i, &name, c.window); err != nil {
			got = err.Error()
		} else {
			got = name
		}
		if got != c.want {
			t.Errorf("Check(%d, %q, %v) = %q, want %q", i, c.name, c.window, got, c.want)
		}
	}
}
