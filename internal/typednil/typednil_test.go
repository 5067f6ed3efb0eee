package typednil_test

import (
	"context"
	"testing"

	"github.com/ratekit/ratekit/internal/typednil"
)

type limiter struct{}

func (*limiter) Allow(context.Context, string) bool { return true }

type allower interface {
	Allow(context.Context, string) bool
}

func TestIs(t *testing.T) {
	var nilPtr *limiter
	var nilIface allower
	var nilMap map[string]int
	var nilFunc func()
	var nilChan chan int
	var nilSlice []int
	for name, v := range map[string]any{
		"nil": nil, "nil pointer": nilPtr, "nil pointer in an interface": allower(nilPtr),
		"nil interface": nilIface, "nil map": nilMap, "nil func": nilFunc, "nil chan": nilChan, "nil slice": nilSlice,
	} {
		if !typednil.Is(v) {
			t.Errorf("Is(%s) = false, want true", name)
		}
	}
	for name, v := range map[string]any{
		"pointer": &limiter{}, "struct": limiter{}, "int": 0, "string": "", "map": map[string]int{},
		"func": func() {}, "empty slice": []int{},
	} {
		if typednil.Is(v) {
			t.Errorf("Is(%s) = true, want false", name)
		}
	}
}
