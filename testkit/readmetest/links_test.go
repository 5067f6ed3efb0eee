package readmetest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// anchor returns the anchor GitHub gives a heading: lower case, spaces as
// '-', and every character but letters, digits, '-' and '_' dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of the headings of a Markdown text, outside
// fenced blocks.
func anchors(md string) map[string]bool {
	var prose strings.Builder
	inFence := 0
	for _, l := range strings.Split(md, "\n") {
		if n, info, ok := fence(strings.TrimSpace(l)); ok {
			switch {
			case inFence == 0:
				inFence = n
			case n >= inFence && info == "":
				inFence = 0
			}
			continue
		}
		if inFence == 0 {
			prose.WriteString(l + "\n")
		}
	}
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(prose.String(), -1) {
		out[anchor(m[1])] = true
	}
	return out
}

// Every relative link of README.md and docs/*.md names a file of the
// repository, and, into a Markdown file, one of its headings.
func TestLinks(t *testing.T) {
	n := 0
	for _, f := range markdownFiles(t) {
		md, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(md), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, frag, _ := strings.Cut(target, "#")
			file := filepath.Join(root, filepath.Dir(f), path)
			if path == "" {
				file = filepath.Join(root, f)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(text))[frag] {
				t.Errorf("%s: link %s: no heading with that anchor", f, target)
			}
		}
	}
	if n == 0 {
		t.Fatal("no relative link in README.md or docs/*.md: the extraction is broken")
	}
}

func TestAnchor(t *testing.T) {
	tests := []struct{ give, want string }{
		{"Redis and Redis Cluster", "redis-and-redis-cluster"},
		{"Failure policy: `failsafe`", "failure-policy-failsafe"},
		{"SHA-1 under GODEBUG=fips140=only", "sha-1-under-godebugfips140only"},
		{"One shape, and why", "one-shape-and-why"},
	}
	for _, tt := range tests {
		if got := anchor(tt.give); got != tt.want {
			t.Errorf("anchor(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
