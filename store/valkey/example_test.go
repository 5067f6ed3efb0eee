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

	limiter, _ := slidingcounter.New(valkeystore.New(client), slidingcounter.Config{Limit: 2, Window: time.Minute})
	for i := 0; i < 3; i++ {
		d, err := limiter.Allow(context.Background(), "user:42")
		fmt.Println(d.Allowed, err)
	}
	// Output:
	// true <nil>
	// true <nil>
	// false <nil>
}
