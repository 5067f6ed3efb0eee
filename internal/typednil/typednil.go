// Package typednil tells whether an interface value holds nil: nil
// itself, or a nil pointer, map, slice, channel, function or interface
// of some type. A constructor that takes an interface (a limiter, a
// client) checks with it, so that a typed nil is refused when it is
// given, with an error, instead of panicking at the first call.
package typednil

import (
	"fmt"
	"reflect"
)

// Is reports whether v is nil or holds a nil pointer, map, slice,
// channel, function, interface or unsafe pointer.
func Is(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// Name names a nil v for an error message: "nil", or "a nil *T" for a
// nil pointer (or other nil value) of type *T.
func Name(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("a nil %T", v)
}
