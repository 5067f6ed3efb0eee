package algorithms_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/algorithms"
)

// readDoc returns the text of a file of the repository, from its root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// numberWords spell the counts the docs write out.
var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"}

// countRE finds "six algorithms", the docs' way of saying how many there
// are.
var countRE = regexp.MustCompile(`(?i)\b(` + strings.Join(numberWords, "|") + `|\d+)\s+algorithms\b`)

// tableRows returns the algorithms named by the rows of a Markdown table
// whose second column is `algorithms/<name>`, in order.
func tableRows(md string) []string {
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| [^|]+ \\| `algorithms/(\\w+)` \\|").FindAllStringSubmatch(md, -1) {
		rows = append(rows, m[1])
	}
	return rows
}

// sorted returns a sorted copy of names.
func sorted(names []string) []string {
	return slices.Sorted(slices.Values(names))
}

// matches returns the algorithms a human name in the docs stands for:
// those whose Name it is, or whose Title holds each of its words ("sliding
// log" for "Sliding window log").
func matches(name string) []string {
	fields := func(s string) []string {
		return strings.Fields(strings.ToLower(strings.NewReplacer("(", " ", ")", " ").Replace(s)))
	}
	words := fields(name)
	var out []string
	for _, a := range algorithms.All {
		title := fields(a.Title)
		all := len(words) > 0
		for _, w := range words {
			all = all && slices.Contains(title, w)
		}
		if all || strings.EqualFold(name, a.Name) {
			out = append(out, a.Name)
		}
	}
	return out
}

// TestDocsListEveryAlgorithm keeps every list of the algorithms in the
// docs in step with All, so that an algorithm added to All and missing
// from one of them (or one removed and still listed) fails here:
//
//   - every "six algorithms" of README.md, docs/*.md and doc.go says how
//     many All holds;
//   - README.md's table ("Choosing an algorithm") has one row per entry,
//     in All's order, and its list of names ("six algorithms: token
//     bucket, GCRA, ...") names each once;
//   - docs/algorithms.md's list ("Which one": "**Token bucket**
//     (`tokenbucket`)") and its table name each once;
//   - doc.go, the root package doc, names each package;
//   - where docs/algorithms.md and carry.go part them into the buckets
//     (the algorithms with a Carry) and the windows, each list in
//     parentheses ("(`tokenbucket`, `leakybucket`, `gcra`)") is one of
//     the two parts, whole, and both are there.
func TestDocsListEveryAlgorithm(t *testing.T) {
	names := algorithms.Names()
	want := sorted(names)

	docs, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md", "doc.go"}
	for _, d := range docs {
		files = append(files, filepath.ToSlash(strings.TrimPrefix(d, ".."+string(filepath.Separator))))
	}
	said := 0
	for _, f := range files {
		for _, m := range countRE.FindAllStringSubmatch(readDoc(t, f), -1) {
			said++
			if len(names) >= len(numberWords) || !strings.EqualFold(m[1], numberWords[len(names)]) {
				t.Errorf("%s says %q; algorithms.All has %d (%s)", f, m[0], len(names), numberWords[min(len(names), len(numberWords)-1)])
			}
		}
	}
	if said == 0 {
		t.Error(`no doc says how many algorithms there are ("six algorithms"): the search is broken`)
	}

	readme := readDoc(t, "README.md")
	if rows := tableRows(readme); !slices.Equal(rows, names) {
		t.Errorf("README.md's algorithm table has rows for %v, algorithms.All %v (in its order)", rows, names)
	}
	list := regexp.MustCompile(`(?i)\b(?:` + strings.Join(numberWords, "|") + `)\s+algorithms:\s*([^;|]+)`).FindStringSubmatch(readme)
	if list == nil {
		t.Error(`README.md lists no algorithms by name ("six algorithms: token bucket, GCRA, ...;")`)
	} else {
		var got []string
		for _, n := range strings.Split(list[1], ",") {
			n = strings.TrimSpace(n)
			m := matches(n)
			if len(m) != 1 {
				t.Errorf("README.md's list of algorithms names %q, which is %d of algorithms.All's titles (%v), want 1", n, len(m), m)
				continue
			}
			got = append(got, m[0])
		}
		if got = sorted(got); !slices.Equal(got, want) {
			t.Errorf("README.md's list of algorithms (%q) names %v, algorithms.All %v", list[1], got, want)
		}
	}

	guide := readDoc(t, "docs/algorithms.md")
	var bullets []string
	for _, m := range regexp.MustCompile("(?m)^- \\*\\*[^*]+\\*\\* \\(`(\\w+)`[,)]").FindAllStringSubmatch(guide, -1) {
		bullets = append(bullets, m[1])
	}
	if got := sorted(bullets); !slices.Equal(got, want) {
		t.Errorf("docs/algorithms.md's list (\"- **Token bucket** (`tokenbucket`): ...\") names %v, algorithms.All %v", got, want)
	}
	if got := sorted(tableRows(guide)); !slices.Equal(got, want) {
		t.Errorf("docs/algorithms.md's table has rows for %v, algorithms.All %v", got, want)
	}

	var carry, windows []string
	for _, a := range algorithms.All {
		if slices.ContainsFunc(a.Params, func(p algorithms.Param) bool { return p.Name == "carry" }) {
			carry = append(carry, a.Name)
		} else {
			windows = append(windows, a.Name)
		}
	}
	carry, windows = sorted(carry), sorted(windows)
	for _, f := range []string{"docs/algorithms.md", "carry.go"} {
		var parts int
		for _, list := range algorithmLists(readDoc(t, f)) {
			switch got := sorted(list); {
			case slices.Equal(got, carry):
				parts |= 1
			case slices.Equal(got, windows):
				parts |= 2
			default:
				t.Errorf("%s lists the algorithms %v together; want the buckets (with a Carry) %v or the windows %v", f, list, carry, windows)
			}
		}
		if parts != 3 {
			t.Errorf("%s does not list both the buckets %v and the windows %v (the search is broken, or a list is gone: drop it from this test)", f, carry, windows)
		}
	}

	doc := readDoc(t, "doc.go")
	for _, n := range names {
		if !regexp.MustCompile(`\b` + n + `\b`).MatchString(doc) {
			t.Errorf("doc.go (the root package doc) does not name algorithms/%s among the algorithms", n)
		}
	}
}

// algorithmLists returns the lists in parentheses of text whose every item
// is the name of an entry of All, perhaps in backticks and across lines:
// "(`tokenbucket`, `leakybucket`, `gcra`)", "(fixedwindow,\n//
// slidingcounter, slidinglog)".
func algorithmLists(text string) [][]string {
	var out [][]string
	for _, m := range regexp.MustCompile(`\(([^()]+)\)`).FindAllStringSubmatch(text, -1) {
		items := strings.Split(strings.NewReplacer("\n", " ", "//", " ", "`", "", " and ", ",").Replace(m[1]), ",")
		if len(items) < 2 {
			continue
		}
		var list []string
		for _, it := range items {
			it = strings.TrimSpace(it)
			if _, ok := algorithms.Lookup(it); !ok {
				list = nil
				break
			}
			list = append(list, it)
		}
		if list != nil {
			out = append(out, list)
		}
	}
	return out
}

// Each algorithm is found by its Title and its Name, and its Name finds
// it alone.
func TestMatches(t *testing.T) {
	for _, a := range algorithms.All {
		if got := matches(a.Title); !slices.Contains(got, a.Name) {
			t.Errorf("matches(%q) = %v, want %s among them", a.Title, got, a.Name)
		}
		if got := matches(a.Name); !slices.Equal(got, []string{a.Name}) {
			t.Errorf("matches(%q) = %v, want [%s]", a.Name, got, a.Name)
		}
	}
	if got := matches("calendar windows"); got != nil {
		t.Errorf("matches(%q) = %v, want none", "calendar windows", got)
	}
}
