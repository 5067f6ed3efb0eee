package rules_test

import (
	"fmt"
	"log"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// Loads counts the loads that put a configuration in force and those
// that failed (envoy's config_load_success and config_load_error); a
// failed one keeps the configuration in force.
func ExampleRules_Loads() {
	store, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	r, err := rules.New(store, nil, rules.Options{})
	if err != nil {
		log.Fatal(err)
	}
	good := []rules.File{{Name: "api.yaml", Data: []byte("domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 10}\n")}}
	bad := []rules.File{{Name: "api.yaml", Data: []byte("domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: fortnight, requests_per_unit: 10}\n")}}
	if _, err := r.Update(good, rules.LoadOptions{}); err != nil {
		log.Fatal(err)
	}
	_, err = r.Update(bad, rules.LoadOptions{})
	fmt.Println(err)
	fmt.Println(r.Loads())
	fmt.Print(r.Config().Dump())
	// Output:
	// api.yaml:4: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'
	// 1 1
	// api.user: unit=SECOND requests_per_unit=10, shadow_mode: false, quota_mode: false
}

// Dump describes the rules one line each, as envoyproxy/ratelimit's
// /rlconfig does.
func ExampleConfig_Dump() {
	cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(`
domain: api
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 60}
  - key: path
    value: /login
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
`)}}, rules.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(cfg.Dump())
	// Output:
	// api.remote_address: unit=MINUTE requests_per_unit=60, shadow_mode: false, quota_mode: false
	// api.path_/login: unit=MINUTE requests_per_unit=5, shadow_mode: true, quota_mode: false
}
