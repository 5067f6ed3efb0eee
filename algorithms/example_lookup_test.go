package algorithms_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/ratekit/ratekit/algorithms"
	"github.com/ratekit/ratekit/store/memory"
)

// Names lists every algorithm, as a configuration file names them, in
// the order they are registered: here the two sliding windows.
func ExampleNames() {
	for _, name := range algorithms.Names() {
		if strings.HasPrefix(name, "sliding") {
			fmt.Println(name)
		}
	}
	// Output:
	// slidinglog
	// slidingcounter
}

// Lookup finds an algorithm by the name a configuration gives, and
// reports a name it does not know.
func ExampleLookup() {
	_, ok := algorithms.Lookup("fortnightly")
	fmt.Println("fortnightly:", ok)

	a, ok := algorithms.Lookup("slidinglog")
	fmt.Println(a.Title, ok)
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer store.Close()
	p := a.Defaults()
	p[a.Limit().Name] = 1
	limiter, err := a.New(store, p, nil, "")
	if err != nil {
		panic(err)
	}
	for i := 0; i < 2; i++ {
		d, err := limiter.Allow(context.Background(), "user:42")
		fmt.Println(d.Allowed, err)
	}
	// Output:
	// fortnightly: false
	// Sliding window log true
	// true <nil>
	// false <nil>
}
