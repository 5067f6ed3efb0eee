package rules_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/rules"
)

// The cases of envoyproxy/ratelimit's test/config/config_test.go, on its
// own files (testdata/envoy).

func load(t *testing.T, opts rules.LoadOptions, names ...string) (*rules.Config, error) {
	t.Helper()
	var files []rules.File
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join("testdata", "envoy", n))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rules.File{Name: n, Data: data})
	}
	return rules.Parse(files, opts)
}

func mustLoad(t *testing.T, names ...string) *rules.Config {
	t.Helper()
	cfg, err := load(t, rules.LoadOptions{}, names...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// entries makes entries from "k=v" strings.
func entries(kv ...string) []rules.Entry {
	out := make([]rules.Entry, len(kv))
	for i, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		out[i] = rules.Entry{Key: k, Value: v}
	}
	return out
}

type matchCase struct {
	domain  string
	entries []rules.Entry
	want    string // the rule's Path, "" for none
	rpu     uint32
	unit    rules.Unit
}

func checkMatches(t *testing.T, cfg *rules.Config, tests []matchCase) {
	t.Helper()
	for _, tt := range tests {
		rule, _ := cfg.Match(tt.domain, tt.entries)
		if tt.want == "" {
			if rule != nil {
				t.Errorf("Match(%q, %v) = %s, want no rule", tt.domain, tt.entries, rule.Path)
			}
			continue
		}
		if rule == nil {
			t.Errorf("Match(%q, %v) = no rule, want %s", tt.domain, tt.entries, tt.want)
			continue
		}
		if rule.Path != tt.want || rule.RequestsPerUnit != tt.rpu || rule.Unit != tt.unit {
			t.Errorf("Match(%q, %v) = %s %d/%v, want %s %d/%v", tt.domain, tt.entries, rule.Path, rule.RequestsPerUnit, rule.Unit, tt.want, tt.rpu, tt.unit)
		}
	}
}

func TestBasicConfig(t *testing.T) {
	cfg := mustLoad(t, "basic_config.yaml")
	if _, found := cfg.Match("foo_domain", nil); found {
		t.Error("Match found foo_domain")
	}
	if _, found := cfg.Match("test-domain", nil); !found {
		t.Error("Match did not find test-domain")
	}
	checkMatches(t, cfg, []matchCase{
		{"test-domain", nil, "", 0, 0},
		{"test-domain", entries("key1=something"), "", 0, 0},
		{"test-domain", entries("key1=value1"), "", 0, 0},
		{"test-domain", entries("key2=value2", "subkey=subvalue"), "", 0, 0},
		// No fallback to a default once a value matched.
		{"test-domain", entries("key5=value5", "subkey5=subvalue"), "", 0, 0},
		{"test-domain", entries("key1=value1", "subkey1=something"), "test-domain.key1_value1.subkey1", 5, rules.Second},
		{"test-domain", entries("key1=value1", "subkey1=subvalue1"), "test-domain.key1_value1.subkey1_subvalue1", 10, rules.Second},
		{"test-domain", entries("key2=something"), "test-domain.key2", 20, rules.Minute},
		{"test-domain", entries("key2=value2"), "test-domain.key2_value2", 30, rules.Minute},
		// Whitelisted: matched, no rate_limit, despite key2's default.
		{"test-domain", entries("key2=value3"), "", 0, 0},
		{"test-domain", entries("key3=foo"), "test-domain.key3", 1, rules.Hour},
		{"test-domain", entries("key4=foo"), "test-domain.key4", 1, rules.Day},
		{"test-domain", entries("key5=value5"), "test-domain.key5_value5", 15, rules.Day},
		{"test-domain", entries("key5=value5", "subkey5=subvalue5"), "test-domain.key5_value5.subkey5_subvalue5", 25, rules.Day},
		{"test-domain", entries("key7=unspecified_value"), "test-domain.key7", 70, rules.Minute},
		// Depth must match: more entries than the configuration has.
		{"test-domain", entries("key3=foo", "more=x"), "", 0, 0},
	})
	rule, _ := cfg.Match("test-domain", entries("key4=foo"))
	if rule.Name != "key4_rate_limit" {
		t.Errorf("key4's Name = %q, want key4_rate_limit", rule.Name)
	}
	rule, _ = cfg.Match("test-domain", entries("key3=foo"))
	if rule.Name != "" {
		t.Errorf("key3's Name = %q, want none", rule.Name)
	}
	rule, _ = cfg.Match("test-domain", entries("key6=foo"))
	if rule == nil || !rule.Unlimited || len(rule.Limits) != 0 {
		t.Errorf("key6 = %+v, want an unlimited rule", rule)
	}
	rule, _ = cfg.Match("test-domain", entries("key7=x"))
	if !rule.DetailedMetric {
		t.Error("key7 is not DetailedMetric")
	}
	if got := cfg.Domains(); len(got) != 1 || got[0] != "test-domain" {
		t.Errorf("Domains() = %v", got)
	}
}

func TestDomainMerge(t *testing.T) {
	cfg, err := load(t, rules.LoadOptions{MergeDomains: true}, "merge_domain_key1.yaml", "merge_domain_key2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, cfg, []matchCase{
		{"test-domain", entries("key1=value1"), "test-domain.key1_value1", 10, rules.Minute},
		{"test-domain", entries("key2=value2"), "test-domain.key2_value2", 20, rules.Minute},
	})
	if _, err := load(t, rules.LoadOptions{}, "merge_domain_key1.yaml", "merge_domain_key2.yaml"); err == nil {
		t.Error("two files of one domain loaded without MergeDomains")
	}
}

func TestShadowModeConfig(t *testing.T) {
	cfg := mustLoad(t, "shadowmode_config.yaml")
	for _, tt := range []struct {
		e      []rules.Entry
		shadow bool
		rpu    uint32
	}{
		{entries("key1=value1", "subkey1=something"), false, 5},
		{entries("key1=value1", "subkey1=subvalue1"), true, 10},
		{entries("key2=something"), true, 20},
		{entries("key2=value2"), false, 30},
	} {
		rule, _ := cfg.Match("test-domain", tt.e)
		if rule == nil || rule.ShadowMode != tt.shadow || rule.RequestsPerUnit != tt.rpu {
			t.Errorf("Match(%v) = %+v, want shadow %v, %d", tt.e, rule, tt.shadow, tt.rpu)
		}
	}
}

func TestWildcardConfig(t *testing.T) {
	cfg := mustLoad(t, "wildcard.yaml")
	checkMatches(t, cfg, []matchCase{
		{"test-domain", entries("noVal=foo1"), "test-domain.noVal", 20, rules.Minute},
		{"test-domain", entries("wild=foo1"), "test-domain.wild_foo*", 20, rules.Minute},
		{"test-domain", entries("wild=foo2"), "test-domain.wild_foo*", 20, rules.Minute},
		{"test-domain", entries("wild=foo"), "test-domain.wild_foo*", 20, rules.Minute},
		{"test-domain", entries("nestedWild=val1", "wild=goo2"), "test-domain.nestedWild_val1.wild_goo*", 20, rules.Minute},
		{"test-domain", entries("wild=bar"), "", 0, 0},
		{"test-domain", entries("noWild=foo1"), "", 0, 0},
		{"test-domain", entries("noWild=foo"), "test-domain.noWild_foo", 20, rules.Minute},
		// '*' anywhere (envoyproxy/ratelimit since 2026-02): bar*b.
		{"test-domain", entries("midWild=barb"), "test-domain.midWild_bar*b", 20, rules.Minute},
		{"test-domain", entries("midWild=barab"), "test-domain.midWild_bar*b", 20, rules.Minute},
		{"test-domain", entries("midWild=bara"), "", 0, 0},
	})
}

func TestWildcardPatterns(t *testing.T) {
	cfg, err := rules.Parse([]rules.File{{Name: "w.yaml", Data: []byte(`
domain: d
descriptors:
  - key: path
    value: foo*bar*baz
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: path
    value: "*"
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: order
    value: a*
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: order
    value: ab*
    rate_limit: {unit: second, requests_per_unit: 4}
`)}}, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, cfg, []matchCase{
		{"d", entries("path=foo1bar2baz"), "d.path_foo*bar*baz", 1, rules.Second},
		{"d", entries("path=foobarbaz"), "d.path_foo*bar*baz", 1, rules.Second},
		{"d", entries("path=foo123baz"), "d.path_*", 2, rules.Second}, // foo*bar*baz does not match: the next wildcard does
		{"d", entries("path="), "d.path_*", 2, rules.Second},
		// Wildcards in file order: the first that matches wins.
		{"d", entries("order=abc"), "d.order_a*", 3, rules.Second},
	})
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		files []string
		merge bool
		want  string
	}{
		{[]string{"empty_domain.yaml"}, false, "empty_domain.yaml: domain: config file cannot have empty domain"},
		{[]string{"basic_config.yaml", "duplicate_domain.yaml"}, false, "duplicate_domain.yaml:1: domain: duplicate domain 'test-domain' in config file"},
		{[]string{"empty_key.yaml"}, false, "empty_key.yaml:3: descriptors[0].key: descriptor has empty key"},
		{[]string{"duplicate_key.yaml"}, false, "duplicate_key.yaml:6: descriptors[1]: duplicate descriptor composite key 'test-domain.key1_value1'"},
		{[]string{"merge_domain_key1.yaml", "merge_domain_key1.yaml"}, true, "merge_domain_key1.yaml:5: descriptors[0]: duplicate descriptor composite key 'test-domain.key1_value1'"},
		{[]string{"bad_limit_unit.yaml"}, false, "bad_limit_unit.yaml:6: descriptors[0].rate_limit.unit: invalid rate limit unit 'foo'"},
		{[]string{"replaces_self.yaml"}, false, "replaces_self.yaml:10: descriptors[0].descriptors[0].rate_limit.replaces[0].name: replaces should not contain name of same descriptor"},
		{[]string{"replaces_empty.yaml"}, false, "replaces_empty.yaml:10: descriptors[0].descriptors[0].rate_limit.replaces[0].name: should not have an empty replaces entry"},
		{[]string{"bad_yaml.yaml"}, false, "bad_yaml.yaml:2: error loading config file: found unexpected end of stream"},
		{[]string{"misspelled_key.yaml"}, false, "misspelled_key.yaml:5: descriptors[0].ratelimit: config error, unknown key 'ratelimit'"},
		{[]string{"misspelled_key2.yaml"}, false, "misspelled_key2.yaml:7: descriptors[0].rate_limit.requestsperunit: config error, unknown key 'requestsperunit'"},
		{[]string{"non_string_key.yaml"}, false, "non_string_key.yaml:1: config error, key is not of type string: 0.25"},
		{[]string{"non_map_list.yaml"}, false, "non_map_list.yaml:3: descriptors[0]: config error, yaml file contains list of type other than map: a"},
		{[]string{"unlimited_with_unit.yaml"}, false, "unlimited_with_unit.yaml:6: descriptors[0].rate_limit.unit: should not specify rate limit unit when unlimited"},
	}
	for _, tt := range tests {
		cfg, err := load(t, rules.LoadOptions{MergeDomains: tt.merge}, tt.files...)
		if err == nil {
			t.Errorf("%v loaded: %v", tt.files, cfg.Domains())
			continue
		}
		if !errors.Is(err, rules.ErrConfig) {
			t.Errorf("%v: %v does not wrap ErrConfig", tt.files, err)
		}
		var ce *rules.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%v: %v is no ConfigError", tt.files, err)
		}
		if first := strings.Split(err.Error(), "\n")[0]; first != tt.want {
			t.Errorf("%v: error %q, want %q", tt.files, first, tt.want)
		}
	}
}

func TestShareThresholdConfig(t *testing.T) {
	cfg := mustLoad(t, "share_threshold.yaml")
	checkMatches(t, cfg, []matchCase{
		{"test-domain", entries("files=files/a.pdf"), "test-domain.files_files/*", 100, rules.Minute},
		{"test-domain", entries("nested=parent", "files=nested/x"), "test-domain.nested_parent.files_nested/*", 200, rules.Minute},
		{"test-domain", entries("files=top/a", "files=nested/b"), "test-domain.files_top/*.files_nested/*", 300, rules.Minute},
		{"test-domain", entries("file=test1"), "test-domain.file_test1", 50, rules.Minute},
		{"test-domain", entries("file=test2"), "test-domain.file_test*", 100, rules.Minute},
	})
	_, err := rules.Parse([]rules.File{{Name: "s.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n")}}, rules.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "share_threshold can only be used with wildcard values") {
		t.Errorf("share_threshold without a wildcard: %v", err)
	}
}
