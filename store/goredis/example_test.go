package goredisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/scriptproto"
)

func ExampleNew() {
	// Any Redis: redis.NewClient, NewClusterClient, NewRing.
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr(), MaxRetries: -1})
	defer rdb.Close()

	store, err := goredisstore.New(rdb)
	if err != nil {
		panic(err)
	}
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, err := limiter.Allow(context.Background(), "user:42")
		fmt.Println(d.Allowed, d.Remaining, err)
	}
	// Output:
	// true 1 <nil>
	// true 0 <nil>
	// false 0 <nil>
}

// Redis before 7.0 (and miniredis) needs read-only scripts sent as plain
// EVALSHA. With no Clock, the limiter decides at the server's TIME.
func ExampleNew_withoutReadOnlyCommands() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr(), MaxRetries: -1})
	defer rdb.Close()

	store, err := goredisstore.New(rdb, scriptproto.WithoutReadOnlyCommands())
	if err != nil {
		panic(err)
	}
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	limiter.AllowN(ctx, "k", 2)
	d, err := limiter.Peek(ctx, "k")
	fmt.Println(d.Allowed, d.Remaining, err)
	// Output: false 0 <nil>
}
