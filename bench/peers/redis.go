package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// redisServer is the harness's own redis-server: a free loopback port, no
// persistence.
type redisServer struct {
	addr    string
	port    int
	version string
	cmd     *exec.Cmd
	dir     string
}

func startRedis() (*redisServer, error) { return startRedisUnder() }

// startRedisUnder starts the harness's redis-server under the command
// wrap (valgrind and its options), or alone when wrap is empty.
func startRedisUnder(wrap ...string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found on PATH (apt-get install redis-server): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "ratekit-bench-")
	if err != nil {
		return nil, err
	}
	args := append(wrap, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "", "--loglevel", "warning")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port), port: port, cmd: cmd, dir: dir}
	deadline := time.Now().Add(60 * time.Second) // valgrind starts slowly
	for {
		info, err := command(s.addr, "INFO", "server")
		if err == nil {
			for _, line := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
					s.version = v
				}
			}
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("redis-server did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pid is the server's process id, 0 when the harness started none.
func (s *redisServer) pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *redisServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// command sends one command and returns a bulk or simple reply as text.
func command(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("%s", line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		for got := 0; got < len(buf); {
			m, err := r.Read(buf[got:])
			if err != nil {
				return "", err
			}
			got += m
		}
		return string(buf[:n]), nil
	}
	return line, nil
}
