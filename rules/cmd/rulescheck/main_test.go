package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	for _, d := range []string{good, bad} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(good, "a.yaml"), "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 20}\n")
	write(filepath.Join(bad, "a.yaml"), "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 20}\n")
	write(filepath.Join(bad, "b.yaml"), "domain: b\ndescriptors:\n  - key: k\n    ratelimit: {}\n")
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{good}, 0, []string{good + ": ok, 1 domain(s), 1 rule(s)"}},
		{[]string{"-dump", "-config_dir", good}, 0, []string{"a.k: unit=MINUTE requests_per_unit=20, shadow_mode: false, quota_mode: false", "ok"}},
		{[]string{bad}, 1, []string{
			"a.yaml:4: descriptors[0].rate_limit.unit: invalid rate limit unit 'fortnight'",
			"b.yaml:4: descriptors[0].ratelimit: config error, unknown key 'ratelimit'",
			bad + ": 2 error(s): the configuration does not load",
		}},
		{[]string{filepath.Join(dir, "missing")}, 1, []string{"no such file", "missing: 1 error(s): the configuration does not load"}},
		{nil, 2, nil},
		{[]string{good, bad}, 2, nil},
		{[]string{"-nope", good}, 2, nil},
	}
	for _, tt := range tests {
		var out, errOut strings.Builder
		if code := run(tt.args, &out, &errOut); code != tt.code {
			t.Errorf("run(%q) = %d, want %d; output:\n%s%s", tt.args, code, tt.code, out.String(), errOut.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("run(%q) printed:\n%s\nwant %q in it", tt.args, out.String(), w)
			}
		}
	}
}
