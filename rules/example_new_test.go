package rules_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// New checks what the configuration needs of its Options: a rule of
// failure_mode local decides on Options.LocalStore while the store fails,
// so without one the configuration is refused, naming the file, the line
// and the field.
func ExampleNew() {
	cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(`
domain: api
descriptors:
  - key: search
    rate_limit: {unit: second, requests_per_unit: 500, failure_mode: local}
`)}}, rules.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	store, err := memory.New() // or any Redis store
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	_, err = rules.New(store, cfg, rules.Options{})
	var ce *rules.ConfigError
	fmt.Println(errors.As(err, &ce), ce.File, ce.Line, ce.Field)

	local, err := memory.New() // each process's own, while the store fails
	if err != nil {
		log.Fatal(err)
	}
	defer local.Close()
	r, err := rules.New(store, cfg, rules.Options{LocalStore: local})
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Decide(context.Background(), "api", []rules.Descriptor{{Entries: []rules.Entry{{Key: "search", Value: "q"}}}}, 1)
	fmt.Println(res.Allowed, err)
	// Output:
	// true api.yaml 5 descriptors[0].rate_limit.failure_mode
	// true <nil>
}

// Decide answers each descriptor of a request, in order. By default each
// is decided on its own, as envoyproxy/ratelimit decides it: the second
// request is over the path's limit, which counts nothing, while the
// address's limit still counts it. A cost of 0 asks without counting.
func ExampleRules_Decide() {
	cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(`
domain: api
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: path
    value: /login
    rate_limit: {unit: minute, requests_per_unit: 1}
`)}}, rules.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	store, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	r, err := rules.New(store, cfg, rules.Options{})
	if err != nil {
		log.Fatal(err)
	}
	request := []rules.Descriptor{
		{Entries: []rules.Entry{{Key: "remote_address", Value: "192.0.2.7"}}},
		{Entries: []rules.Entry{{Key: "path", Value: "/login"}}},
	}
	for _, hits := range []int64{1, 1, 0} {
		res, err := r.Decide(context.Background(), "api", request, hits)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("hits %d: allowed %v;", hits, res.Allowed)
		for _, s := range res.Statuses {
			fmt.Printf(" %s %s %d left;", s.StatsKey, s.Code, s.Remaining)
		}
		fmt.Println()
	}
	// Output:
	// hits 1: allowed true; api.remote_address OK 4 left; api.path_/login OK 0 left;
	// hits 1: allowed false; api.remote_address OK 3 left; api.path_/login OVER_LIMIT 0 left;
	// hits 0: allowed false; api.remote_address OK 3 left; api.path_/login OVER_LIMIT 0 left;
}
