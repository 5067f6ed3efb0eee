package rueidisstore_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/ratekit/ratekit/store/scriptproto"
)

func ExampleNew() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	store, err := rueidisstore.New(client)
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

// Redis before 7.0 and miniredis need read-only scripts sent as plain
// EVALSHA.
func ExampleNew_withoutReadOnlyCommands() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redisAddr()}})
	if err != nil {
		panic(err)
	}
	defer client.Close()

	store, err := rueidisstore.New(client, scriptproto.WithoutReadOnlyCommands())
	if err != nil {
		panic(err)
	}
	limiter, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 2, RefillRate: 1, RefillInterval: time.Minute})
	if err != nil {
		panic(err)
	}
	d, err := limiter.Peek(context.Background(), "k")
	fmt.Println(d.Allowed, d.Remaining, err)
	// Output: true 2 <nil>
}
