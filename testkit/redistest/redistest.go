// Package redistest starts throwaway redis-server processes for tests: on a
// free loopback port, with no persistence, stopped in t.Cleanup.
//
// The server is redis-server on PATH, or the command in
// RATEKIT_REDIS_SERVER: a command line prefix, its words separated by
// spaces (no quoting), to which the server's arguments are appended, so
// that a server unpacked with its own loader can be given:
//
//	RATEKIT_REDIS_SERVER="/srv/redis-8/ld-linux-x86-64.so.2 --library-path /srv/redis-8/lib /srv/redis-8/redis-server"
//
// (.ci/servers.sh installs such servers; the Makefile's test-servers runs
// the store tests on each). [ServerVersion] says which server it is.
//
// When redis-server is not on PATH and RATEKIT_REDIS_SERVER is not set, a
// test that asks for one fails under CI=true and is skipped, loudly,
// elsewhere. A RATEKIT_REDIS_SERVER that does not run fails the test.
//
// It is one of ratekit's own test kits (testkit/): importable, so that
// the stores' modules can use it, with no promise of compatibility.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running redis-server started by Start.
type Server struct {
	// Addr is host:port on the loopback interface.
	Addr string
	// Port is the TCP port of Addr.
	Port int

	bin  []string // the command prefix: the binary, or a loader and its arguments
	args []string
	dir  string
	cmd  *exec.Cmd
	exit chan struct{}
}

// EnvServer is the environment variable that names the server command.
const EnvServer = "RATEKIT_REDIS_SERVER"

// Binary returns the command that starts a server, as a command line
// prefix (see the package doc), or fails or skips t as described there.
func Binary(t testing.TB) []string {
	t.Helper()
	bin, err := serverCommand()
	switch {
	case err == nil:
		return bin
	case os.Getenv(EnvServer) != "":
		t.Fatalf("%v", err)
	case os.Getenv("CI") == "true":
		t.Fatalf("redistest: redis-server not found on PATH under CI=true: %v", err)
	}
	t.Skipf("redistest: SKIPPING real-Redis test: redis-server not found on PATH (%v); install it, e.g. apt-get install -y redis-server", err)
	return nil
}

// serverCommand returns the command that starts a server (see the package
// doc), or why there is none.
func serverCommand() ([]string, error) {
	if v := os.Getenv(EnvServer); v != "" {
		words := strings.Fields(v)
		if _, err := exec.LookPath(words[0]); err != nil {
			return nil, fmt.Errorf("redistest: %s=%q: %v", EnvServer, v, err)
		}
		return words, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	return []string{bin}, nil
}

// Version is what a server binary says of itself (--version): its name,
// "Redis" or "Valkey", and its release.
type Version struct {
	Name                string
	Major, Minor, Patch int
}

// String returns the name and release, "Redis 6.0.16".
func (v Version) String() string {
	return fmt.Sprintf("%s %d.%d.%d", v.Name, v.Major, v.Minor, v.Patch)
}

// Redis returns the release of Redis whose commands the server has: its
// own for Redis, 7.2 for Valkey (which forked Redis 7.2.4, and reports
// that as its redis_version).
func (v Version) Redis() (major, minor int) {
	if v.Name == "Valkey" {
		return 7, 2
	}
	return v.Major, v.Minor
}

// AtLeast reports whether the server has the commands of Redis
// major.minor (see Redis).
func (v Version) AtLeast(major, minor int) bool {
	m, n := v.Redis()
	return m > major || m == major && n >= minor
}

var versions sync.Map // strings.Join(Binary, " ") -> Version

var versionRE = regexp.MustCompile(`^(\w+) server v=(\d+)\.(\d+)\.(\d+)`)

// ServerVersion returns the version of the server Start starts, or fails
// or skips t as Binary does.
func ServerVersion(t testing.TB) Version {
	t.Helper()
	bin := Binary(t)
	key := strings.Join(bin, " ")
	if v, ok := versions.Load(key); ok {
		return v.(Version)
	}
	out, err := exec.Command(bin[0], append(bin[1:], "--version")...).CombinedOutput()
	v, perr := parseVersion(string(out))
	if err != nil || perr != nil {
		t.Fatalf("redistest: %s --version: %v, %v: %s", key, err, perr, out)
	}
	versions.Store(key, v)
	return v
}

// VerbatimScripts returns the arguments that make the server replicate a
// script as the script itself, not as the commands it ran, unless the
// script calls redis.replicate_commands(): lua-replicate-commands no, on
// Redis 5.0 to 6.2. Such a server refuses a write after TIME in a script
// that did not call it. There are none on Redis 7.0 and later and Valkey,
// which always replicate the commands (and have no such option), nor
// before 5.0, where it is the default.
func VerbatimScripts(t testing.TB) []string {
	t.Helper()
	if v := ServerVersion(t); v.AtLeast(5, 0) && !v.AtLeast(7, 0) {
		return []string{"--lua-replicate-commands", "no"}
	}
	return nil
}

// parseVersion reads the first line of redis-server --version: "Redis
// server v=7.0.15 sha=...", "Valkey server v=8.0.1 ...".
func parseVersion(out string) (Version, error) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return Version{}, fmt.Errorf("no \"NAME server v=X.Y.Z\" in %q", out)
	}
	v := Version{Name: m[1]}
	for i, p := range []*int{&v.Major, &v.Minor, &v.Patch} {
		*p, _ = strconv.Atoi(m[2+i]) // \d+ of a version: small
	}
	return v, nil
}

// Start starts a redis-server with extra command-line arguments (for
// example "--requirepass", "secret"), waits until it answers PING, and stops
// it when t ends.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin := Binary(t)
	s, err := launch(bin, t.TempDir(), extra...)
	if err != nil {
		t.Fatalf("redistest: cannot start %s: %v", strings.Join(bin, " "), err)
	}
	t.Cleanup(s.Kill)
	return s
}

// launch starts a server in dir on a free port, trying a few ports.
func launch(bin []string, dir string, extra ...string) (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, bin: bin, dir: dir}
		s.args = append([]string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--save", "",
			"--appendonly", "no",
			"--dir", s.dir,
			"--logfile", "",
			"--loglevel", "warning",
		}, extra...)
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// Restart starts the server again on the same port after Kill.
func (s *Server) Restart() error { return s.start() }

func (s *Server) start() error {
	cmd := exec.Command(s.bin[0], append(s.bin[1:len(s.bin):len(s.bin)], s.args...)...)
	cmd.Dir = s.dir
	// If the test binary dies, so does the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exit) }()
	s.cmd, s.exit = cmd, exit
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exit:
			return fmt.Errorf("redis-server on port %d exited: %s", s.Port, strings.TrimSpace(out.String()))
		default:
		}
		if err := ping(s.Addr); err == nil || strings.Contains(err.Error(), "NOAUTH") {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.Kill()
	return fmt.Errorf("redis-server on port %d did not answer PING within 10s: %s", s.Port, out.String())
}

// Kill stops the server with SIGKILL and waits for it to exit.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exit
}

// Signal sends sig to the server process (for example SIGSTOP, SIGCONT).
func (s *Server) Signal(sig syscall.Signal) error {
	return s.cmd.Process.Signal(sig)
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}
