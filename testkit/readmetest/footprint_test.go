package readmetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratekit/ratekit/testkit/redistest"
)

// docs/footprint.sh measures what a program that uses ratekit carries
// (docs/design.md, "Modules"): each of its programs is tidied, built and
// run, the deciding ones on a real redis-server, so that a change of API
// breaks the script here rather than in silence.
func TestFootprint(t *testing.T) {
	srv := redistest.Start(t)
	script, err := filepath.Abs(filepath.Join(root, "docs", "footprint.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script)
	cmd.Env = append(os.Environ(), "FOOTPRINT_REDIS="+srv.Addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docs/footprint.sh: %v\n%s", err, out)
	}
	measured := regexp.MustCompile(`(?m)^(\S+)\s+graph\s+\d+\s+list-m-all\s+\d+\s+go\.sum\s+\d+\s+go \S+$`).FindAllStringSubmatch(string(out), -1)
	ran := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(\S+)\s+ran: (.*)$`).FindAllStringSubmatch(string(out), -1) {
		ran[m[1]] = strings.TrimSpace(m[2])
	}
	if len(measured) == 0 {
		t.Fatalf("docs/footprint.sh measured no program:\n%s", out)
	}
	decided := 0
	for _, m := range measured {
		got, ok := ran[m[1]]
		switch {
		case !ok:
			t.Errorf("docs/footprint.sh did not run its %s program", m[1])
		case got == "allowed true remaining 2":
			decided++
		case got != "ok":
			t.Errorf("docs/footprint.sh's %s program printed %q; want %q (a decision) or %q", m[1], got, "allowed true remaining 2", "ok")
		}
	}
	// The memory store's, go-redis' and rueidis' programs decide.
	if decided < 3 {
		t.Errorf("%d of docs/footprint.sh's programs decided, want at least 3 (memory, go-redis, rueidis):\n%s", decided, out)
	}
	t.Logf("%s", out)
}
