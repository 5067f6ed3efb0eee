package rules_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/rules"
)

// Every bad input is an error naming the file, the line and the field.
func TestStrictErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"duplicate key", "domain: d\ndomain: e\n", "f.yaml:2: domain: key 'domain' given twice (first at line 1)"},
		{"unknown root key", "domain: d\nunit: second\n", "f.yaml:2: unit: config error, unknown key 'unit'"},
		{"key at the wrong level", "domain: d\ndescriptors:\n  - key: k\n    requests_per_unit: 5\n", "f.yaml:4: descriptors[0].requests_per_unit: config error, unknown key 'requests_per_unit'"},
		{"negative rpu", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: -1\n", "f.yaml:6: descriptors[0].rate_limit.requests_per_unit: an integer from 0 to 4294967295 is needed, got '-1'"},
		{"rpu too large", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 4294967296\n", "f.yaml:6: descriptors[0].rate_limit.requests_per_unit: an integer from 0 to 4294967295 is needed, got '4294967296'"},
		{"rpu text", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: ten\n", "got 'ten'"},
		{"missing unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 1\n", "f.yaml:5: descriptors[0].rate_limit.unit: invalid rate limit unit ''"},
		{"unit unknown", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: unknown\n      requests_per_unit: 1\n", "invalid rate limit unit 'unknown'"},
		{"bool", "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: maybe\n", "f.yaml:4: descriptors[0].shadow_mode: true or false is needed, got 'maybe'"},
		{"descriptors not a list", "domain: d\ndescriptors: {key: k}\n", "f.yaml:2: descriptors: descriptors is a list of descriptors, this is a mapping"},
		{"domain a list", "domain: [a]\n", "f.yaml:1: domain: a string is needed, this is a list"},
		{"not a mapping", "- a\n", "f.yaml:1: a file is a mapping of domain and descriptors, this one is a list"},
		{"two documents", "domain: d\n---\ndomain: e\n", "f.yaml:2: a file holds one YAML document, this one holds more"},
		{"empty", "", "f.yaml: config file cannot have empty domain"},
		{"metadata not a map", "domain: d\ndescriptors:\n  - key: k\n    metadata: 3\n", "f.yaml:4: descriptors[0].metadata: error parsing metadata: a mapping is needed, this is a scalar (int)"},
		{"unknown algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: magic}\n", "f.yaml:4: descriptors[0].rate_limit.algorithm: unknown algorithm 'magic'"},
		{"burst on a window", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, burst: 5}\n", "burst is for tokenbucket, gcra and leakybucket, not fixedwindow"},
		{"bad period", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 1, period: soon}\n", "f.yaml:4: descriptors[0].rate_limit.period: a positive duration is needed (\"30s\", \"5m\"), got 'soon'"},
		{"unit and period", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, period: 30s}\n", "give unit or period, not both"},
		{"calendar of seconds", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, calendar: UTC}\n", "calendar is for a fixedwindow of unit day, week or month"},
		{"bad zone", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: day, requests_per_unit: 1, calendar: Mars/Olympus}\n", "calendar names a time zone"},
		{"period not whole microseconds", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 1, period: 1500ns}\n", "f.yaml:4: descriptors[0].rate_limit: fixedwindow: Window"},
		{"duplicate in nested", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n      - key: b\n", "f.yaml:6: descriptors[0].descriptors[1]: duplicate descriptor composite key 'd.a.b'"},
	}
	for _, tt := range tests {
		_, err := rules.Parse([]rules.File{{Name: "f.yaml", Data: []byte(tt.yaml)}}, rules.LoadOptions{})
		if err == nil {
			t.Errorf("%s: loaded", tt.name)
			continue
		}
		if !errors.Is(err, rules.ErrConfig) {
			t.Errorf("%s: %v does not wrap ErrConfig", tt.name, err)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q, want %q in it", tt.name, err, tt.want)
		}
	}
}

// A configuration loads whole or not at all: every error is reported,
// and no Config is returned.
func TestParseAllOrNothing(t *testing.T) {
	good := rules.File{Name: "good.yaml", Data: []byte("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")}
	bad := rules.File{Name: "bad.yaml", Data: []byte("domain: b\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n  - key: j\n    colour: red\n")}
	cfg, err := rules.Parse([]rules.File{good, bad}, rules.LoadOptions{})
	if cfg != nil || err == nil {
		t.Fatalf("Parse = %v, %v: want no Config and an error", cfg, err)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "bad.yaml:4:") || !strings.HasPrefix(lines[1], "bad.yaml:6:") {
		t.Errorf("errors %q, want one for line 4 and one for line 6", lines)
	}
}

// What envoyproxy/ratelimit's YAML library reads, this reads: numbers as
// values, YAML 1.1 booleans, anchors and merge keys, null for absent.
func TestParseYAMLForms(t *testing.T) {
	cfg, err := rules.Parse([]rules.File{{Name: "f.yaml", Data: []byte(`
domain: d
descriptors:
  - key: status
    value: 429
    shadow_mode: yes
    rate_limit: &limit
      unit: MINUTE
      requests_per_unit: 7
  - key: other
    rate_limit:
      <<: *limit
      name: other
  - key: whitelisted
    rate_limit:
  - key: meta
    metadata: {team: a, tiers: [1, 2]}
    rate_limit: {unit: week, requests_per_unit: 1}
`)}}, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := cfg.Match("d", entries("status=429"))
	if r == nil || !r.ShadowMode || r.Unit != rules.Minute || r.RequestsPerUnit != 7 {
		t.Errorf("status=429: %+v", r)
	}
	r, _ = cfg.Match("d", entries("other=x"))
	if r == nil || r.Name != "other" || r.RequestsPerUnit != 7 || r.Unit != rules.Minute {
		t.Errorf("merged: %+v", r)
	}
	if r, _ = cfg.Match("d", entries("whitelisted=x")); r != nil {
		t.Errorf("rate_limit null: %+v, want none", r)
	}
	r, _ = cfg.Match("d", entries("meta=x"))
	if r == nil || r.Metadata["team"] != "a" || r.Unit != rules.Week || r.Window != 7*24*60*60*1e9 {
		t.Errorf("metadata: %+v", r)
	}
}
