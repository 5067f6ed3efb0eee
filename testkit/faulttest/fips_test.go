package faulttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ratekit/ratekit/testkit/redistest"
)

// TestFIPSOnly builds the programs of testdata/fips and runs them with
// GODEBUG=fips140=only, where crypto/sha1 panics: one deciding on the
// memory store, which must compute no SHA-1 at all, and one deciding
// through every Redis store on a real redis-server, which must still send
// EVALSHA (core.Script.SHA1 computes the hash outside enforcement). Each
// program checks that enforcement is on, so a run without it fails.
func TestFIPSOnly(t *testing.T) {
	dir := t.TempDir()
	build := func(t *testing.T, pkg string) string {
		t.Helper()
		bin := filepath.Join(dir, filepath.Base(pkg))
		args := []string{"build", "-o", bin}
		if raceBuild() {
			args = append(args, "-race") // reuses the test's compiled packages
		}
		out, err := exec.CommandContext(t.Context(), "go", append(args, pkg)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		return bin
	}
	run := func(t *testing.T, bin string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = append(os.Environ(), "GODEBUG=fips140=only")
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			t.Fatalf("GODEBUG=fips140=only %s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
		}
	}
	t.Run("memory", func(t *testing.T) {
		run(t, build(t, "./testdata/fips/memory"))
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		run(t, build(t, "./testdata/fips/redis"), srv.Addr)
		// Had the program sent a wrong SHA-1, every EVALSHA would have
		// met NOSCRIPT and been sent again as EVAL. With the right one,
		// EVAL runs once per script, for the first store; the four
		// stores each send every script as EVALSHA at least once.
		rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
		defer rdb.Close()
		info, err := rdb.Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		evals := commandCalls(info, "eval") + commandCalls(info, "eval_ro")
		evalshas := commandCalls(info, "evalsha") + commandCalls(info, "evalsha_ro")
		if evals == 0 || 4*evals > evalshas {
			t.Errorf("EVAL calls = %d, EVALSHA calls = %d: want EVAL once per script and EVALSHA at least 4 times as often", evals, evalshas)
		}
	})
}

// raceBuild reports whether the test binary was built with -race.
func raceBuild() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// commandCalls returns the calls of cmd in INFO commandstats, 0 when cmd
// never ran.
func commandCalls(info, cmd string) int {
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
		return n
	}
	return 0
}
