package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ratekit/ratekit/fakeclock"
)

// RUNTIME_IGNOREDOTFILES, as envoyproxy/ratelimit's runtime loader
// (lyft/goruntime) reads it: false by default, and then a file or a
// directory whose name begins with '.' is loaded as any other; true skips
// them.
func TestRuntimeIgnoreDotFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(filepath.Join(dir, ".d"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"visible.yaml": "domain: visible\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n",
		".dot.yaml":    "domain: dotfile\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 6}\n",
		".d/dir.yaml":  "domain: dotdir\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 7}\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		env       map[string]string
		dotLoaded bool
	}{
		{map[string]string{}, true}, // envoyproxy/ratelimit's default
		{map[string]string{"RUNTIME_IGNOREDOTFILES": "false"}, true},
		{map[string]string{"RUNTIME_IGNOREDOTFILES": "true"}, false},
	} {
		tt.env["RUNTIME_ROOT"] = root
		r := startRLS(t, "memory", fakeclock.New(epoch), tt.env)
		step := "RUNTIME_IGNOREDOTFILES=" + tt.env["RUNTIME_IGNOREDOTFILES"]
		checkResponse(t, step+" visible", r.call("visible", desc("k", "v")), ok, wantStatus{ok, 5, minute, 4})
		if tt.dotLoaded {
			checkResponse(t, step+" .dot.yaml", r.call("dotfile", desc("k", "v")), ok, wantStatus{ok, 6, minute, 5})
			checkResponse(t, step+" .d/dir.yaml", r.call("dotdir", desc("k", "v")), ok, wantStatus{ok, 7, minute, 6})
		} else {
			// An unknown domain: OK, no limit.
			checkResponse(t, step+" .dot.yaml", r.call("dotfile", desc("k", "v")), ok, wantStatus{code: ok})
			checkResponse(t, step+" .d/dir.yaml", r.call("dotdir", desc("k", "v")), ok, wantStatus{code: ok})
		}
	}
}
