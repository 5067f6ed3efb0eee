package redistest

import (
	"bufio"
	"flag"
	"net"
	"runtime"
	"strconv"
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
	t.Setenv(EnvServer, "")
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

func TestBadEnvServerFails(t *testing.T) {
	t.Setenv(EnvServer, "/nonexistent/redis-server --port")
	for _, ci := range []string{"true", ""} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() { defer close(done); Binary(r) }()
		<-done
		if r.fatal == "" || r.skip != "" {
			t.Errorf("CI=%q: fatal %q, skip %q; want a failure naming %s", ci, r.fatal, r.skip, EnvServer)
		}
	}
}

// The server command is a prefix: here one that ends in an argument of
// its own, which the server then has.
func TestEnvServerIsAPrefix(t *testing.T) {
	t.Setenv(EnvServer, strings.Join(Binary(t), " ")+" --maxmemory 12345678")
	s := Start(t)
	conn, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("CONFIG GET maxmemory\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	var reply []string
	for len(reply) < 5 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		reply = append(reply, strings.TrimSpace(line))
	}
	if reply[4] != "12345678" {
		t.Fatalf("CONFIG GET maxmemory = %q: the server was not started through %s's prefix", reply, EnvServer)
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		give string
		want Version
	}{
		{"Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0\n", Version{"Redis", 7, 0, 15}},
		{"Redis server v=6.0.16 sha=00000000:0 malloc=jemalloc-5.2.1 bits=64 build=6d95e1af3a2c082a", Version{"Redis", 6, 0, 16}},
		{"Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=39f7c371e0a96e3d", Version{"Valkey", 8, 0, 1}},
	}
	for _, tt := range tests {
		if got, err := parseVersion(tt.give); err != nil || got != tt.want {
			t.Errorf("parseVersion(%q) = %v, %v; want %v", tt.give, got, err, tt.want)
		}
	}
	if v, err := parseVersion("redis-server: command not found"); err == nil {
		t.Errorf("parseVersion of no version = %v, nil; want an error", v)
	}
	for _, tt := range []struct {
		v            Version
		major, minor int
		want         bool
	}{
		{Version{"Redis", 6, 0, 16}, 6, 2, false},
		{Version{"Redis", 6, 2, 0}, 6, 2, true},
		{Version{"Redis", 8, 0, 2}, 7, 0, true},
		{Version{"Valkey", 8, 0, 1}, 7, 2, true},
		{Version{"Valkey", 8, 0, 1}, 7, 4, false},
	} {
		if got := tt.v.AtLeast(tt.major, tt.minor); got != tt.want {
			t.Errorf("%v.AtLeast(%d, %d) = %v, want %v", tt.v, tt.major, tt.minor, got, tt.want)
		}
	}
}

// ServerVersion agrees with what the running server reports.
func TestServerVersion(t *testing.T) {
	v := ServerVersion(t)
	s := Start(t)
	info, err := Command(s.Addr, "INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	field := strings.ToLower(v.Name) + "_version:"
	want := field + strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) + "." + strconv.Itoa(v.Patch)
	if !strings.Contains(info, want+"\r\n") {
		t.Fatalf("ServerVersion = %v, but INFO server has no %q:\n%s", v, want, info)
	}
	t.Logf("server: %v", v)
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
	t.Setenv(EnvServer, "") // the server matrix names one: no server here
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
