package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestVendoredUPlot: the charting library embedded under web/uplot is the
// release its SOURCE.md names, file for file, with its licence.
func TestVendoredUPlot(t *testing.T) {
	note, err := fs.ReadFile(webFiles, "web/uplot/SOURCE.md")
	if err != nil {
		t.Fatal(err)
	}
	version := regexp.MustCompile(`^# uPlot (\d+\.\d+\.\d+), vendored`).FindSubmatch(note)
	if version == nil {
		t.Fatalf("SOURCE.md does not open with the version:\n%s", note)
	}
	rows := regexp.MustCompile("(?m)^\\| (\\S+) \\| \\S+ \\| ([0-9a-f]{64}) \\|$").FindAllSubmatch(note, -1)
	if len(rows) != 2 {
		t.Fatalf("SOURCE.md lists %d files with a sha256, want 2:\n%s", len(rows), note)
	}
	for _, row := range rows {
		b, err := fs.ReadFile(webFiles, "web/uplot/"+string(row[1]))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != string(row[2]) {
			t.Errorf("%s: sha256 %s, SOURCE.md says %s", row[1], got, row[2])
		}
	}
	js, err := fs.ReadFile(webFiles, "web/uplot/uPlot.iife.min.js")
	if err != nil {
		t.Fatal(err)
	}
	if want := "(v" + string(version[1]) + ")"; !strings.Contains(string(js[:min(len(js), 200)]), want) {
		t.Errorf("uPlot.iife.min.js: its header %.80q does not name %s", js, want)
	}
	license, err := fs.ReadFile(webFiles, "web/uplot/LICENSE")
	if err != nil || !strings.Contains(string(license), "The MIT License") {
		t.Errorf("web/uplot/LICENSE: %v %.40q", err, license)
	}
}

// TestPageAssets: every script and stylesheet the page loads is embedded
// and served, and none comes from elsewhere.
func TestPageAssets(t *testing.T) {
	ts := newTestServer(t)
	page, err := fs.ReadFile(webFiles, "web/index.html")
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllSubmatch(page, -1)
	want := map[string]string{".js": "text/javascript", ".css": "text/css"}
	n := 0
	for _, ref := range refs {
		path := string(ref[1])
		ext := path[strings.LastIndex(path, "."):]
		if want[ext] == "" {
			t.Errorf("index.html loads %q, neither a script nor a stylesheet", path)
			continue
		}
		if strings.Contains(path, "//") || strings.HasPrefix(path, "/") {
			t.Errorf("index.html loads %q: not one of the page's own files", path)
			continue
		}
		resp, err := http.Get(ts.URL + "/" + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), want[ext]) {
			t.Errorf("GET /%s: %s %q", path, resp.Status, resp.Header.Get("Content-Type"))
		}
		n++
	}
	if n < 8 {
		t.Errorf("index.html loads %d files; want at least uPlot's two and the page's six", n)
	}
}
