package rules_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/ratekit/ratekit/core"
	"github.com/ratekit/ratekit/failsafe"
	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

// unreachable is a store that is down: every call fails.
type unreachable struct{}

func (unreachable) RunScript(ctx context.Context, s *core.Script, keys []string, args []int64, reply []int64) ([]int64, error) {
	return reply, fmt.Errorf("%w: connection refused", core.ErrStore)
}

// A rule's failure_mode says what it decides while the store fails:
// checkout denies, search decides on the local store (2 an hour, in this
// process alone), and a rule without one returns the store's error.
func ExampleFailureModes() {
	cfg, err := rules.Parse([]rules.File{{Name: "api.yaml", Data: []byte(`
domain: api
descriptors:
  - key: checkout
    rate_limit: {unit: second, requests_per_unit: 50, failure_mode: closed}
  - key: search
    rate_limit: {unit: hour, requests_per_unit: 2, failure_mode: local}
  - key: profile
    rate_limit: {unit: second, requests_per_unit: 50}
`)}}, rules.LoadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	local, err := memory.New()
	if err != nil {
		log.Fatal(err)
	}
	defer local.Close()
	r, err := rules.New(unreachable{}, cfg, rules.Options{
		LocalStore: local,
		Failsafe:   failsafe.Config{Timeout: 5 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rules.FailureModes())
	for _, key := range []string{"checkout", "search", "search", "search", "profile"} {
		res, err := r.Decide(context.Background(), "api", []rules.Descriptor{{Entries: []rules.Entry{{Key: key, Value: "ann"}}}}, 1)
		fmt.Println(key, res.Allowed, err)
	}
	// Output:
	// [open closed local]
	// checkout false <nil>
	// search true <nil>
	// search true <nil>
	// search false <nil>
	// profile false ratekit: store failed: connection refused
}
