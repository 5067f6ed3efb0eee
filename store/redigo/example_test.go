package redigostore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/ratekit/ratekit/algorithms/gcra"
	redigostore "github.com/ratekit/ratekit/store/redigo"
)

func ExampleNew() {
	addr := redisAddr()
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
	defer pool.Close()

	store, err := redigostore.New(pool)
	if err != nil {
		panic(err)
	}
	limiter, err := gcra.New(store, gcra.Config{Rate: 1, Period: time.Second, Burst: 2})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		d, err := limiter.Allow(context.Background(), "user:42")
		fmt.Println(d.Allowed, err)
	}
	// Output:
	// true <nil>
	// true <nil>
	// false <nil>
}
