package clientip_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/internal/clientip"
)

func TestValue(t *testing.T) {
	for _, tt := range []struct {
		vs     []string
		maxLen int
		want   string // the value, or the error
	}{
		{[]string{"k1"}, 0, "k1"},
		{nil, 0, "header X-Key is missing"},
		{[]string{""}, 0, "header X-Key is missing"},
		{[]string{"a", "b"}, 0, "header X-Key has 2 values, want one"},
		{[]string{"", "b"}, 0, "header X-Key has 2 values, want one"},
		{[]string{strings.Repeat("v", 256)}, 0, strings.Repeat("v", 256)},
		{[]string{strings.Repeat("v", 257)}, 0, "header X-Key is 257 bytes, longer than 256"},
		{[]string{"abcd"}, 3, "header X-Key is 4 bytes, longer than 3"},
	} {
		got, err := clientip.Value("header", "X-Key", tt.vs, tt.maxLen)
		if err != nil {
			// A client's bad key: 400, as any invalid key.
			if !errors.Is(err, core.ErrInvalidKey) {
				t.Errorf("Value(%q, %d): %v does not wrap core.ErrInvalidKey", tt.vs, tt.maxLen, err)
			}
			got = strings.TrimPrefix(err.Error(), core.ErrInvalidKey.Error()+": ")
		}
		if got != tt.want {
			t.Errorf("Value(%q, %d) = %q, want %q", tt.vs, tt.maxLen, got, tt.want)
		}
	}
}

func TestCheckMaxLen(t *testing.T) {
	for n, ok := range map[int]bool{0: true, 1: true, core.MaxKeyLen - 2: true, core.MaxKeyLen - 1: false, -1: false, core.MaxKeyLen + 1: false} {
		if err := clientip.CheckMaxLen("MaxLen", n, "h:"); (err == nil) != ok {
			t.Errorf("CheckMaxLen(%d) = %v", n, err)
		}
	}
}

func TestCheckHeaderName(t *testing.T) {
	for name, ok := range map[string]bool{"X-API-Key": true, "x_tenant.id~1": true, "": false, "X API": false, "X:Key": false, "Ключ": false} {
		if err := clientip.CheckHeaderName(name); (err == nil) != ok {
			t.Errorf("CheckHeaderName(%q) = %v", name, err)
		}
	}
}
