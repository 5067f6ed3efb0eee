package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratekit/ratekit/fakeclock"
)

const metadataYAML = `domain: meta
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 10}
    metadata: {team: alpha, limits: {tier: gold, region: eu}, tags: [x, 1]}
  - key: b
    descriptors:
      - key: sub
        rate_limit: {unit: minute, requests_per_unit: 10}
        metadata: {team: beta, limits: {tier: silver, zone: z1}, extra: true}
  - key: over
    rate_limit: {unit: minute, requests_per_unit: 0}
    metadata: {denied: true}
  - key: free
    rate_limit: {unlimited: true}
    metadata: {free: 1}
  - key: c
    rate_limit: {unit: minute, requests_per_unit: 10}
    metadata: {overridden: true}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: minute, requests_per_unit: 0}
    metadata: {shadowed: true}
  - key: quota
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 0}
    metadata: {quota: true}
  - key: rep
    rate_limit: {unit: minute, requests_per_unit: 10, name: replaced}
    metadata: {replaced: true}
  - key: repl
    rate_limit: {unit: minute, requests_per_unit: 10, replaces: [{name: replaced}]}
    metadata: {replacer: true}
`

// RESPONSE_DYNAMIC_METADATA=true: the response's dynamic_metadata has
// envoyproxy/ratelimit's shape exactly (ratelimitToMetadata): the domain,
// each descriptor's entries, limit override and hits_addend, the
// request's hits_addend, and the metadata of the rules that passed,
// merged in order (the first value of a key wins, mappings merge). Unset
// or false, there is none.
func TestResponseDynamicMetadata(t *testing.T) {
	root := runtimeRoot(t, metadataYAML)
	override := &commonv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_MINUTE}
	request := func() *rlsv3.RateLimitRequest {
		a := desc("a", "1")
		a.HitsAddend = wrapperspb.UInt64(2)
		c := desc("c", "3")
		c.Limit = override
		return &rlsv3.RateLimitRequest{Domain: "meta", HitsAddend: 1, Descriptors: []*commonv3.RateLimitDescriptor{
			a, desc("b", "2", "sub", "s"), desc("over", "x"), desc("free", "y"), c, desc("nomatch", "z"),
			desc("shadow", "s"), desc("quota", "q"), desc("rep", "1"), desc("repl", "1"),
		}}
	}
	want, err := structpb.NewStruct(map[string]any{
		"domain": "meta",
		"descriptors": []any{
			map[string]any{"entries": []any{"a=1"}, "hitsAddend": 2},
			map[string]any{"entries": []any{"b=2", "sub=s"}},
			map[string]any{"entries": []any{"over=x"}},
			map[string]any{"entries": []any{"free=y"}},
			map[string]any{"entries": []any{"c=3"}, "limit": override.String()},
			map[string]any{"entries": []any{"nomatch=z"}},
			map[string]any{"entries": []any{"shadow=s"}},
			map[string]any{"entries": []any{"quota=q"}},
			map[string]any{"entries": []any{"rep=1"}},
			map[string]any{"entries": []any{"repl=1"}},
		},
		"hitsAddend": 1,
		// a's, then b/sub's keys a lacks (zone, extra), shadow's (OK in
		// shadow) and repl's: not over's or quota's (over their limit),
		// free's (unlimited), c's (overridden) or rep's (replaced).
		"metadata": map[string]any{
			"team": "alpha", "limits": map[string]any{"tier": "gold", "region": "eu", "zone": "z1"},
			"tags": []any{"x", 1}, "extra": true, "shadowed": true, "replacer": true,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		set, value string
		want       *structpb.Struct
	}{
		{"RESPONSE_DYNAMIC_METADATA", "true", want},
		{"RESPONSE_DYNAMIC_METADATA", "false", nil},
		{"", "", nil}, // unset: envoyproxy/ratelimit's default, false
	} {
		env := map[string]string{"RUNTIME_ROOT": root}
		if tt.set != "" {
			env[tt.set] = tt.value
		}
		r := startRLS(t, "memory", fakeclock.New(epoch), env)
		step := "RESPONSE_DYNAMIC_METADATA=" + tt.value
		// Twice: what one response merges never leaks into the next.
		for i := range 2 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := r.client.ShouldRateLimit(ctx, request())
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			codes := []rlsv3.RateLimitResponse_Code{ok, ok, over, ok, ok, ok, ok, over, ok, ok}
			for j, st := range resp.GetStatuses() {
				if j < len(codes) && st.GetCode() != codes[j] {
					t.Errorf("%s: status %d = %v, want %v", step, j, st.GetCode(), codes[j])
				}
			}
			if got := resp.GetDynamicMetadata(); !proto.Equal(got, tt.want) {
				t.Errorf("%s, call %d: dynamic_metadata =\n%s\nwant\n%s", step, i, protojson.Format(got), protojson.Format(tt.want))
			}
		}
	}
}

// runtimeRoot is a fresh RUNTIME_ROOT whose ratelimit/config holds
// config, alone.
func runtimeRoot(t *testing.T, config string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// A rule whose stats are named by the request (detailed_metric, or
// value_to_metric with a value) keeps its metadata in the response.
// envoyproxy/ratelimit (at f2fb157) rebuilds such a rule for its new stats
// name with NewRateLimit, which does not copy Metadata, so there the rule's
// metadata is missing; docs/server.md says so under "Where it differs".
// The stats names are envoyproxy/ratelimit's, the empty value's too
// ("det_": its detailed key is every entry's key, "_" and value).
func TestResponseDynamicMetadataNamedStats(t *testing.T) {
	root := runtimeRoot(t, `domain: named
descriptors:
  - key: plain
    rate_limit: {unit: minute, requests_per_unit: 10}
    metadata: {plain: true}
  - key: det
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
    metadata: {detailed: {by: request}}
  - key: vtm
    value_to_metric: true
    rate_limit: {unit: minute, requests_per_unit: 10}
    metadata: {valued: true}
`)
	r := startRLS(t, "memory", fakeclock.New(epoch), map[string]string{"RUNTIME_ROOT": root, "RESPONSE_DYNAMIC_METADATA": "true"})
	for _, tt := range []struct {
		step  string
		ds    []*commonv3.RateLimitDescriptor
		meta  map[string]any
		stats []string
	}{
		{"plain alone", []*commonv3.RateLimitDescriptor{desc("plain", "p")},
			map[string]any{"plain": true}, []string{"named.plain"}},
		{"detailed_metric", []*commonv3.RateLimitDescriptor{desc("det", "d")},
			map[string]any{"detailed": map[string]any{"by": "request"}}, []string{"named.det_d"}},
		{"detailed_metric, empty value", []*commonv3.RateLimitDescriptor{desc("det", "")},
			map[string]any{"detailed": map[string]any{"by": "request"}}, []string{"named.det_"}},
		{"value_to_metric", []*commonv3.RateLimitDescriptor{desc("vtm", "v")},
			map[string]any{"valued": true}, []string{"named.vtm_v"}},
		{"all three", []*commonv3.RateLimitDescriptor{desc("det", "e"), desc("plain", "q"), desc("vtm", "w")},
			map[string]any{"plain": true, "detailed": map[string]any{"by": "request"}, "valued": true},
			[]string{"named.det_e", "named.plain", "named.vtm_w"}},
	} {
		before := make([]uint64, len(tt.stats))
		for i, name := range tt.stats {
			before[i] = r.stat("ratelimit.service.rate_limit." + name + ".total_hits")
		}
		resp := r.call("named", tt.ds...)
		if resp.GetOverallCode() != ok {
			t.Errorf("%s: %v, want OK", tt.step, resp.GetOverallCode())
		}
		want, err := structpb.NewStruct(tt.meta)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.GetDynamicMetadata().GetFields()["metadata"].GetStructValue()
		if !proto.Equal(got, want) {
			t.Errorf("%s: dynamic_metadata.metadata =\n%s\nwant\n%s", tt.step, protojson.Format(got), protojson.Format(want))
		}
		for i, name := range tt.stats {
			name = "ratelimit.service.rate_limit." + name + ".total_hits"
			if got := r.stat(name); got != before[i]+1 {
				t.Errorf("%s: %s = %d, want %d", tt.step, name, got, before[i]+1)
			}
		}
	}
}
