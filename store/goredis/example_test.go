package goredisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/scriptproto"
)

func ExampleNew() {
	srv, _ := miniredis.Run() // any Redis: redis.NewClient, NewClusterClient, NewRing
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
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

// miniredis (and Redis before 7.0) needs read-only scripts sent as plain
// EVALSHA. With no Clock, the limiter decides at the server's TIME.
func ExampleNew_withoutReadOnlyCommands() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	srv.SetTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
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
	srv.SetTime(time.Date(2026, 1, 1, 0, 0, 45, 0, time.UTC))
	d, err := limiter.Peek(ctx, "k")
	fmt.Println(d.Allowed, d.RetryAfter, err)
	// Output: false 15s <nil>
}
