// This program is built by TestReleasedModules in a fresh module from the
// released modules: a token bucket of one on the memory store and on
// go-redis (the Redis at os.Args[1]), each asked twice.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/ratekit/ratekit/store/memory"
)

func main() {
	store, err := memory.New()
	check(err)
	defer store.Close()
	rdb := redis.NewClient(&redis.Options{Addr: os.Args[1], MaxRetries: -1})
	defer rdb.Close()

	cfg := tokenbucket.Config{Capacity: 1, RefillRate: 1, RefillInterval: time.Hour}
	onMemory, err := tokenbucket.New(store, cfg)
	check(err)
	redisStore, err := goredisstore.New(rdb)
	check(err)
	onRedis, err := tokenbucket.New(redisStore, cfg)
	check(err)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		m, err := onMemory.Allow(ctx, "k")
		check(err)
		r, err := onRedis.Allow(ctx, "k")
		check(err)
		fmt.Println("memory", m.Allowed, "goredis", r.Allowed)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
