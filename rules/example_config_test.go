package rules_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// Parse reports every mistake, each naming the file, the line and the
// field, and loads nothing.
func ExampleParse() {
	_, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(`
domain: api
descriptors:
  - key: remote_address
    rate_limit:
      unit: fortnight
      requests_per_unit: 10
  - key: path
    ratelimit:
      unit: second
`)}}, rules.LoadOptions{})
	fmt.Println(err)
	var ce *rules.ConfigError
	if errors.As(err, &ce) {
		fmt.Println(ce.File, ce.Line, ce.Field)
	}
	// Output:
	// api.yaml:6: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'
	// api.yaml:9: descriptors[1].ratelimit: config error, unknown key 'ratelimit'
	// api.yaml 6 descriptors[0].rate_limit.unit
}

// Load reads a directory: every file below it, but names that begin
// with '.' (a Kubernetes ConfigMap's ..data).
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "rules")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for name, domain := range map[string]string{"a.yaml": "checkout", "b.yaml": "search"} {
		yaml := "domain: " + domain + "\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 60}\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(yaml), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	cfg, err := rules.Load(dir, rules.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Domains())
	fmt.Print(cfg.Dump())
	// Output:
	// [checkout search]
	// checkout.user: unit=MINUTE requests_per_unit=60, shadow_mode: false, quota_mode: false
	// search.user: unit=MINUTE requests_per_unit=60, shadow_mode: false, quota_mode: false
}

// Match finds a descriptor's rule as envoyproxy/ratelimit does: the
// exact value, then wildcards, then the key's default, at the depth of
// the request.
func ExampleConfig_Match() {
	cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(`
domain: api
descriptors:
  - key: path
    rate_limit: {unit: second, requests_per_unit: 100}
  - key: path
    value: /login
    rate_limit: {unit: minute, requests_per_unit: 5}
  - key: path
    value: /static/*
  - key: path
    value: /api/*
    descriptors:
      - key: user
        rate_limit: {unit: second, requests_per_unit: 10}
`)}}, rules.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, entries := range [][]rules.Entry{
		{{Key: "path", Value: "/login"}},
		{{Key: "path", Value: "/about"}},
		{{Key: "path", Value: "/static/logo.png"}},
		{{Key: "path", Value: "/api/orders"}, {Key: "user", Value: "ann"}},
		{{Key: "path", Value: "/api/orders"}},
	} {
		rule, _ := cfg.Match("api", entries)
		if rule == nil {
			fmt.Println(entries, "no limit")
			continue
		}
		fmt.Println(entries, rule.Path, rule.RequestsPerUnit, rule.Unit)
	}
	// Output:
	// [{path /login}] api.path_/login 5 minute
	// [{path /about}] api.path 100 second
	// [{path /static/logo.png}] no limit
	// [{path /api/orders} {user ann}] api.path_/api/*.user 10 second
	// [{path /api/orders}] no limit
}

// DecideTo reuses a Result: a decision on the memory store then
// allocates nothing.
func ExampleRules_DecideTo() {
	cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(
		"domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 2}\n")}}, rules.LoadOptions{})
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
	descriptors := []rules.Descriptor{{Entries: []rules.Entry{{Key: "user", Value: "ann"}}}}
	var res rules.Result
	for range 3 {
		if err := r.DecideTo(context.Background(), &res, "api", descriptors, 1); err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Allowed, res.Statuses[0].Code, res.Statuses[0].Remaining)
	}
	// Output:
	// true OK 1
	// true OK 0
	// false OVER_LIMIT 0
}

// Update loads bytes the program hands over; a configuration that does
// not load keeps the one in force.
func ExampleRules_Update() {
	store, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	r, err := rules.New(store, nil, rules.Options{
		OnLoad: func(cfg *rules.Config, err error) { fmt.Println("loaded:", cfg != nil, err) },
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := r.Update([]rules.File{{Name: "v1.yaml", Data: []byte("domain: api\n")}}, rules.LoadOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := r.Update([]rules.File{{Name: "v2.yaml", Data: []byte("domain: \n")}}, rules.LoadOptions{}); err == nil {
		log.Fatal("v2 loaded")
	}
	fmt.Println(r.Config().Domains())
	fmt.Println(r.Loads())
	// Output:
	// loaded: true <nil>
	// loaded: false v2.yaml:1: domain: config file cannot have empty domain
	// [api]
	// 1 1
}

// Watch keeps a file or directory in force, reading it every Interval.
func ExampleRules_Watch() {
	dir, err := os.MkdirTemp("", "rules")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "api.yaml")
	if err := os.WriteFile(path, []byte("domain: api\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	store, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	loaded := make(chan *rules.Config, 10)
	r, err := rules.New(store, nil, rules.Options{OnLoad: func(cfg *rules.Config, err error) { loaded <- cfg }})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Watch(ctx, path, rules.WatchOptions{Interval: 10 * time.Millisecond}) }()
	fmt.Println((<-loaded).Domains())
	if err := os.WriteFile(path, []byte("domain: checkout\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Println((<-loaded).Domains())
	cancel()
	fmt.Println(<-done)
	// Output:
	// [api]
	// [checkout]
	// context canceled
}

// StatsKey names a descriptor's statistics as envoyproxy/ratelimit does:
// with detailed_metric, each entry's value is in the name.
func ExampleConfig_StatsKey() {
	cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(`
domain: api
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: tenant
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 100}
`)}}, rules.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range []rules.Entry{{Key: "user", Value: "ann"}, {Key: "tenant", Value: "acme"}} {
		entries := []rules.Entry{e}
		rule, _ := cfg.Match("api", entries)
		fmt.Println(cfg.StatsKey("api", entries, rule))
	}
	// Output:
	// api.user
	// api.tenant_acme
}

// Set puts another configuration in force: the counts stay, compared
// with the new limits at once.
func ExampleRules_Set() {
	parse := func(rpu int) *rules.Config {
		cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(fmt.Sprintf(
			"domain: api\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: %d}\n", rpu))}}, rules.LoadOptions{})
		if err != nil {
			log.Fatal(err)
		}
		return cfg
	}
	store, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	r, err := rules.New(store, parse(2), rules.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ann := []rules.Descriptor{{Entries: []rules.Entry{{Key: "user", Value: "ann"}}}}
	for range 3 {
		res, err := r.Decide(context.Background(), "api", ann, 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Allowed, res.Statuses[0].Remaining, "of", res.Statuses[0].RequestsPerUnit)
	}
	if err := r.Set(parse(5)); err != nil { // raised mid-window: the difference, now
		log.Fatal(err)
	}
	res, err := r.Decide(context.Background(), "api", ann, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Allowed, res.Statuses[0].Remaining, "of", res.Statuses[0].RequestsPerUnit)
	// Output:
	// true 1 of 2
	// true 0 of 2
	// false 0 of 2
	// true 2 of 5
}
