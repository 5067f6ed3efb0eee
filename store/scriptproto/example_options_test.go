package scriptproto_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/store/scriptproto"
)

// WithoutReadOnlyCommands sends a limiter's Peek as EVALSHA, not
// EVALSHA_RO: for a server or a fake (miniredis) without the read-only
// commands.
func ExampleWithoutReadOnlyCommands() {
	srv := &server{loaded: map[string]bool{}, keys: map[string][]int64{}}
	store, err := scriptproto.New("mylib", client{srv}, scriptproto.WithoutReadOnlyCommands())
	if err != nil {
		panic(err)
	}
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	d, err := limiter.Peek(context.Background(), "user:42")
	fmt.Println(d.Remaining, err)
	// Output:
	// EVALSHA 1 key(s)
	// EVAL 1 key(s)
	// 2 <nil>
}

// SingleNode tells the Runner that its client talks to one server on
// which a script's keys may span cluster slots, so limiters send a batch
// of keys in any slots as one call (core.SingleNode).
func ExampleSingleNode() {
	srv := &server{loaded: map[string]bool{}, keys: map[string][]int64{}}
	for _, one := range []bool{false, true} {
		store, err := scriptproto.New("mylib", client{srv}, scriptproto.SingleNode(one))
		if err != nil {
			panic(err)
		}
		fmt.Println(store.SingleNode())
	}
	// Output:
	// false
	// true
}

// Pipelining(true) is for a client that sends one command per connection
// at a time: calls that come while four are in flight go together, as
// one DoMulti. A lone caller's call goes at once, as without it.
func ExamplePipelining() {
	srv := &server{loaded: map[string]bool{}, keys: map[string][]int64{}}
	store, err := scriptproto.New("mylib", client{srv}, scriptproto.Pipelining(true))
	if err != nil {
		panic(err)
	}
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	d, err := limiter.Allow(context.Background(), "user:42")
	fmt.Println(d.Allowed, err)
	// Output:
	// EVALSHA 1 key(s)
	// EVAL 1 key(s)
	// true <nil>
}

// DecodeAny reads a reply as go-redis and redigo return it (an array of
// int64 as []any) into the caller's buffer, and refuses anything else
// with core.ErrUnexpectedReply; BadReply wraps a client library's own
// report of a reply it could not read the same way.
func ExampleDecodeAny() {
	reply, err := scriptproto.DecodeAny([]any{int64(1), int64(9), int64(0), int64(60000000)}, nil)
	fmt.Println(reply, err)

	_, err = scriptproto.DecodeAny("OK", nil)
	fmt.Println(errors.Is(err, core.ErrUnexpectedReply), err)

	err = scriptproto.BadReply(errors.New("redis: nil"))
	fmt.Println(errors.Is(err, core.ErrUnexpectedReply))
	// Output:
	// [1 9 0 60000000] <nil>
	// true ratekit: unexpected script reply: replied string, want an array of integers
	// true
}
