package redistest

import (
	"runtime"
	"strings"
	"testing"
)

func TestStartKillRestart(t *testing.T) {
	s := Start(t, "--maxmemory", "64mb")
	if err := ping(s.Addr); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	if err := ping(s.Addr); err == nil {
		t.Fatal("server answers after Kill")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := ping(s.Addr); err != nil {
		t.Fatalf("after Restart: %v", err)
	}
}

func TestRequirePass(t *testing.T) {
	s := Start(t, "--requirepass", "secret")
	if err := ping(s.Addr); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("PING without password: %v", err)
	}
}

// recorder is a testing.TB that records Fatalf and Skipf.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(f string, a ...any) {
	r.fatal = f
	runtime.Goexit()
}
func (r *recorder) Skipf(f string, a ...any) {
	r.skip = f
	runtime.Goexit()
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, ci := range []string{"true", ""} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() { defer close(done); Binary(r) }()
		<-done
		if ci == "true" && (r.fatal == "" || r.skip != "") {
			t.Errorf("CI=true: fatal %q, skip %q; want a failure", r.fatal, r.skip)
		}
		if ci == "" && (r.skip == "" || r.fatal != "" || !strings.Contains(r.skip, "SKIPPING")) {
			t.Errorf("CI unset: fatal %q, skip %q; want a loud skip", r.fatal, r.skip)
		}
	}
}

func TestCommandAndStrings(t *testing.T) {
	s := Start(t)
	if n, err := Command(s.Addr, "RPUSH", "l", "a", "", "ccc"); err != nil || n != "3" {
		t.Fatalf("RPUSH: %q, %v", n, err)
	}
	got, err := Strings(s.Addr, "LRANGE", "l", "0", "-1")
	if err != nil || strings.Join(got, ",") != "a,,ccc" {
		t.Fatalf("LRANGE = %q, %v; want [a  ccc]", got, err)
	}
	if got, err := Strings(s.Addr, "LRANGE", "none", "0", "-1"); err != nil || len(got) != 0 {
		t.Fatalf("LRANGE of no list = %q, %v", got, err)
	}
	if _, err := Strings(s.Addr, "GET", "l"); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("Strings(GET of a list): %v, want WRONGTYPE", err)
	}
	if v, err := Command(s.Addr, "GET", "l"); err == nil {
		t.Fatalf("Command(GET of a list) = %q, want an error", v)
	}
}
