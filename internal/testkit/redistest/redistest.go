// Package redistest starts throwaway redis-server processes for tests: on a
// free loopback port, with no persistence, stopped in t.Cleanup.
//
// When redis-server is not on PATH, a test that asks for one fails under
// CI=true and is skipped, loudly, elsewhere.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

	bin  string
	args []string
	dir  string
	cmd  *exec.Cmd
	exit chan struct{}
}

// Binary returns the path of redis-server, or fails or skips t as described
// in the package doc.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: redis-server not found on PATH under CI=true: %v", err)
		}
		t.Skipf("redistest: SKIPPING real-Redis test: redis-server not found on PATH (%v); install it, e.g. apt-get install -y redis-server", err)
	}
	return bin
}

// Start starts a redis-server with extra command-line arguments (for
// example "--requirepass", "secret"), waits until it answers PING, and stops
// it when t ends.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	s, err := launch(Binary(t), t.TempDir(), extra...)
	if err != nil {
		t.Fatalf("redistest: cannot start redis-server: %v", err)
	}
	t.Cleanup(s.Kill)
	return s
}

// launch starts a server in dir on a free port, trying a few ports.
func launch(bin, dir string, extra ...string) (*Server, error) {
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
	cmd := exec.Command(s.bin, s.args...)
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
