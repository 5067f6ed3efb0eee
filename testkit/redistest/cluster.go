package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cluster is a local Redis Cluster of three masters, and optionally one
// replica of the first master, on free loopback ports.
type Cluster struct {
	// Masters are the three masters, in the order they were created:
	// slots 0-5460, 5461-10922, 10923-16383.
	Masters []*Server
	// Replica is a replica of Masters[0], or nil.
	Replica *Server

	dir string
	cli string // redis-cli
}

// Addrs returns the addresses of every node.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Nodes() {
		out = append(out, s.Addr)
	}
	return out
}

// Nodes returns every node, masters first.
func (c *Cluster) Nodes() []*Server {
	nodes := append([]*Server(nil), c.Masters...)
	if c.Replica != nil {
		nodes = append(nodes, c.Replica)
	}
	return nodes
}

// Stop kills every node and removes the cluster's files.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes() {
		s.Kill()
	}
	os.RemoveAll(c.dir)
}

var shared struct {
	mu      sync.Mutex
	cluster *Cluster
	err     error
}

// SharedCluster returns the package's cluster, starting it on first use:
// three masters and a replica of the first. The tests of a package share
// it; it never assumes the cluster is empty. Stop it from TestMain with
// StopSharedCluster. It fails or skips t like Start when redis-server or
// redis-cli is missing.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := Binary(t)
	cli := cliBinary(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster == nil && shared.err == nil {
		shared.cluster, shared.err = startCluster(bin, cli)
	}
	if shared.err != nil {
		t.Fatalf("redistest: cannot start a Redis Cluster: %v", shared.err)
	}
	return shared.cluster
}

// StopSharedCluster stops the package's shared cluster, if any.
func StopSharedCluster() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.cluster != nil {
		shared.cluster.Stop()
		shared.cluster = nil
	}
}

func cliBinary(t testing.TB) string {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: redis-cli not found on PATH under CI=true: %v", err)
		}
		t.Skipf("redistest: SKIPPING Redis Cluster test: redis-cli not found on PATH (%v); install redis-server, e.g. apt-get install -y redis-server", err)
	}
	return cli
}

func startCluster(bin []string, cli string) (c *Cluster, err error) {
	dir, err := os.MkdirTemp("", "redistest-cluster-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{dir: dir, cli: cli}
	started := c // c is nil once a failure returns
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	node := func(i int) (*Server, error) {
		d := filepath.Join(dir, strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		return launch(bin, d, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			// A replica syncs at once instead of after the default 5 s.
			"--repl-diskless-sync-delay", "0")
	}
	for i := 0; i < 3; i++ {
		s, err := node(i)
		if err != nil {
			return nil, err
		}
		c.Masters = append(c.Masters, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Masters {
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %v: %s", err, out)
	}
	if c.Replica, err = node(3); err != nil {
		return nil, err
	}
	out, err := exec.Command(cli, "--cluster", "add-node", c.Replica.Addr, c.Masters[0].Addr, "--cluster-slave").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("redis-cli --cluster add-node: %v: %s", err, out)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		return nil, err
	}
	return c, nil
}

// WaitHealthy waits until every node reports cluster_state:ok, sees four
// nodes (three when there is no replica) and the replica, if any, has
// finished its initial sync.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ok := true
		for _, s := range c.Nodes() {
			info, err := Command(s.Addr, "CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", len(c.Nodes()))) {
				ok, last = false, fmt.Sprintf("%s: %v %s", s.Addr, err, info)
				break
			}
		}
		if ok && c.Replica != nil {
			repl, err := Command(c.Replica.Addr, "INFO", "replication")
			if err != nil || !strings.Contains(repl, "master_link_status:up") && !strings.Contains(repl, "role:master") {
				ok, last = false, fmt.Sprintf("replica: %v %s", err, repl)
			}
		}
		if ok {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("cluster not healthy after %v: %s", timeout, last)
}

// CLI runs redis-cli with args (for example "--cluster", "reshard", ...)
// and returns what it printed, stdout and stderr together.
func (c *Cluster) CLI(args ...string) (string, error) {
	out, err := exec.Command(c.cli, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Command sends one command to addr over RESP and returns a bulk or
// simple-string reply as text (integers as decimal).
func Command(addr string, args ...string) (string, error) {
	conn, r, err := send(addr, args)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"), strings.HasPrefix(line, ":"):
		return line[1:], nil
	case strings.HasPrefix(line, "-"):
		return "", fmt.Errorf("%s", line[1:])
	case strings.HasPrefix(line, "$"):
		return bulk(r, line)
	}
	return line, nil
}

// Strings sends one command to addr over RESP and returns an array reply
// of bulk strings (CLUSTER GETKEYSINSLOT, KEYS).
func Strings(addr string, args ...string) ([]string, error) {
	conn, r, err := send(addr, args)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "-") {
		return nil, fmt.Errorf("%s", line[1:])
	}
	n, err := strconv.Atoi(strings.TrimPrefix(line, "*"))
	if !strings.HasPrefix(line, "*") || err != nil {
		return nil, fmt.Errorf("%s: want an array, got %q", args[0], line)
	}
	out := make([]string, 0, max(n, 0))
	for range n {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if !strings.HasPrefix(line, "$") {
			return nil, fmt.Errorf("%s: want bulk strings, got %q", args[0], line)
		}
		v, err := bulk(r, line)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// send dials addr and writes args as one RESP command.
func send(addr string, args []string) (net.Conn, *bufio.Reader, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		conn.Close()
		return nil, nil, err
	}
	return conn, bufio.NewReader(conn), nil
}

// bulk reads the body of the bulk string whose header is line ("$5"); a
// nil bulk string reads as "".
func bulk(r *bufio.Reader, line string) (string, error) {
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 {
		return "", err
	}
	buf := make([]byte, n+2)
	if _, err := readFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func readFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
