package redistest

import (
	"flag"
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

func TestExampleAddr(t *testing.T) {
	addr := ExampleAddr()
	if err := ping(addr); err != nil {
		t.Fatal(err)
	}
	if again := ExampleAddr(); again == addr {
		t.Fatalf("ExampleAddr returned %s twice; want a fresh server each call", addr)
	}
	stopExamples()
	if err := ping(addr); err == nil {
		t.Fatal("the example's server answers after stopExamples")
	}
}

func TestSkipExamples(t *testing.T) {
	f := flag.Lookup("test.skip")
	old := f.Value.String()
	t.Cleanup(func() { f.Value.Set(old) })
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CI", "true")
	if err := skipExamples(); err == nil || !strings.Contains(err.Error(), "CI=true") {
		t.Errorf("CI=true: skipExamples() = %v, want an error naming CI=true", err)
	}
	if got := f.Value.String(); got != old {
		t.Errorf("CI=true: -test.skip = %q, want it unchanged (%q)", got, old)
	}
	t.Setenv("CI", "")
	f.Value.Set("TestX")
	if err := skipExamples(); err != nil {
		t.Fatalf("CI unset: skipExamples() = %v, want nil", err)
	}
	if got, want := f.Value.String(), "TestX|^Example"; got != want {
		t.Errorf("CI unset: -test.skip = %q, want %q", got, want)
	}
}
