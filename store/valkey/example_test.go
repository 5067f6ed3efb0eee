package valkeystore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/ratekit/ratekit/algorithms/slidingcounter"
	valkeystore "github.com/ratekit/ratekit/store/valkey"
)

func ExampleNew() {
	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{redisAddr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	store, err := valkeystore.New(client)
	if err != nil {
		panic(err)
	}
	limiter, err := slidingcounter.New(store, slidingcounter.Config{Limit: 2, Window: time.Minute})
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
