package rules_test

import (
	"testing"

	"github.com/ratekit/ratekit/rules"
)

// The statistics names of envoyproxy/ratelimit's config_test.go
// (TestValueToMetric_*, TestShareThreshold, TestDetailedMetric).
func TestStatsKey(t *testing.T) {
	cfg, err := rules.Parse([]rules.File{{Name: "f.yaml", Data: []byte(`
domain: domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value_to_metric: true
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 60}
  - key: k1
    value_to_metric: true
    descriptors:
      - key: k2
        rate_limit: {unit: minute, requests_per_unit: 1}
  - key: m1
    descriptors:
      - key: m2
        value_to_metric: true
        descriptors:
          - key: m3
            rate_limit: {unit: minute, requests_per_unit: 1}
  - key: d1
    value_to_metric: true
    descriptors:
      - key: d2
        value_to_metric: true
        descriptors:
          - key: d3
            detailed_metric: true
            rate_limit: {unit: minute, requests_per_unit: 1}
  - key: user
    value_to_metric: true
    descriptors:
      - key: action
        value: read*
        value_to_metric: true
        descriptors:
          - key: resource
            rate_limit: {unit: minute, requests_per_unit: 1}
  - key: wild
    value: foo*
    rate_limit: {unit: minute, requests_per_unit: 1}
  - key: key_1
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 1}
`)}}, rules.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	share := mustLoad(t, "share_threshold.yaml")
	tests := []struct {
		cfg     *rules.Config
		domain  string
		entries []rules.Entry
		want    string
	}{
		{cfg, "domain", entries("route=draw", "http_method=GET", "subject_id=123"), "domain.route_draw.http_method_GET.subject_id"},
		{cfg, "domain", entries("route=", "http_method=GET", "subject_id=123"), "domain.route.http_method_GET.subject_id"},
		{cfg, "domain", entries("route=draw", "http_method=", "subject_id=123"), "domain.route_draw.http_method.subject_id"},
		{cfg, "domain", entries("k1=A", "k2=foo"), "domain.k1_A.k2"},
		{cfg, "domain", entries("m1=X", "m2=Y", "m3=Z"), "domain.m1.m2_Y.m3"},
		{cfg, "domain", entries("d1=draw", "d2=GET", "d3=123"), "domain.d1_draw.d2_GET.d3_123"},
		{cfg, "domain", entries("user=alice", "action=readfile", "resource=documents"), "domain.user_alice.action_readfile.resource"},
		{cfg, "domain", entries("wild=foo1"), "domain.wild_foo*"},
		{cfg, "domain", entries("key_1=value-for-key-1"), "domain.key_1_value-for-key-1"},
		{share, "test-domain", entries("files=files/a.pdf"), "test-domain.files_files/*"},
		{share, "test-domain", entries("route=api/v1", "method=GET"), "test-domain.route_api/*.method"},
		{share, "test-domain", entries("service=svc/user", "endpoint=get"), "test-domain.service_svc/*.endpoint_get"},
		{share, "test-domain", entries("nested=parent", "files=nested/file1.txt"), "test-domain.nested_parent.files_nested/*"},
		{share, "test-domain", entries("files=top/file1.txt", "files=nested/file1.txt"), "test-domain.files_top/*.files_nested/*"},
		{share, "test-domain", entries("path=path/foo", "file=file/doc1", "type=pdf"), "test-domain.path_path/*.file_file/*.type"},
		{share, "test-domain", entries("user=user/alice", "resource=res/file1", "action=read"), "test-domain.user_user/*.resource_res/*.action"},
		{share, "test-domain", entries("file=test1"), "test-domain.file_test1"},
		{share, "test-domain", entries("file=test2"), "test-domain.file_test*"},
	}
	for _, tt := range tests {
		rule, _ := tt.cfg.Match(tt.domain, tt.entries)
		if rule == nil {
			t.Errorf("%v matched no rule", tt.entries)
			continue
		}
		if got := tt.cfg.StatsKey(tt.domain, tt.entries, rule); got != tt.want {
			t.Errorf("StatsKey(%v) = %q, want %q", tt.entries, got, tt.want)
		}
	}
}

func TestDump(t *testing.T) {
	cfg := mustLoad(t, "shadowmode_config.yaml")
	want := "test-domain.key1_value1.subkey1: unit=SECOND requests_per_unit=5, shadow_mode: false, quota_mode: false\n" +
		"test-domain.key1_value1.subkey1_subvalue1: unit=SECOND requests_per_unit=10, shadow_mode: true, quota_mode: false\n" +
		"test-domain.key2: unit=MINUTE requests_per_unit=20, shadow_mode: true, quota_mode: false\n" +
		"test-domain.key2_value2: unit=MINUTE requests_per_unit=30, shadow_mode: false, quota_mode: false\n"
	if got := cfg.Dump(); got != want {
		t.Errorf("Dump() =\n%s\nwant\n%s", got, want)
	}
}
