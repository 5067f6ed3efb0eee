package rules_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

const exampleYAML = `
domain: api
descriptors:
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 2
  - key: remote_address
    value: 10.0.0.1
`

func Example() {
	cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(exampleYAML)}}, rules.LoadOptions{})
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
	for _, ip := range []string{"192.0.2.7", "192.0.2.7", "192.0.2.7", "10.0.0.1"} {
		res, err := r.Decide(context.Background(), "api", []rules.Descriptor{
			{Entries: []rules.Entry{{Key: "remote_address", Value: ip}}},
		}, 1)
		if err != nil {
			log.Fatal(err)
		}
		s := res.Statuses[0]
		if !s.Checked {
			fmt.Printf("%s: allowed %v, no limit\n", ip, res.Allowed)
			continue
		}
		fmt.Printf("%s: allowed %v, %d left of %d per %v\n", ip, res.Allowed, s.Remaining, s.RequestsPerUnit, s.Unit)
	}
	// Output:
	// 192.0.2.7: allowed true, 1 left of 2 per minute
	// 192.0.2.7: allowed true, 0 left of 2 per minute
	// 192.0.2.7: allowed false, 0 left of 2 per minute
	// 10.0.0.1: allowed true, no limit
}
