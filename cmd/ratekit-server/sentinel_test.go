package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ratekit/ratekit/fakeclock"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// REDIS_TYPE=sentinel: the master found through a sentinel, with
// REDIS_SENTINEL_AUTH for the sentinel and REDIS_AUTH for the master.
func TestRedisSentinel(t *testing.T) {
	master := redistest.Start(t, "--requirepass", "secret")
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	config := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nrequirepass sentinelsecret\n"+
		"sentinel monitor mymaster 127.0.0.1 %d 1\nsentinel auth-pass mymaster secret\n", port, dir, master.Port)
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := redistest.Binary(t)
	cmd := exec.Command(bin[0], append(bin[1:len(bin):len(bin)], conf, "--sentinel")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := redistest.Command(addr, "AUTH", "sentinelsecret"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sentinel at %s did not answer in 10s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := startRLS(t, "", fakeclock.New(epoch), map[string]string{
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_TYPE": "sentinel", "REDIS_URL": "mymaster," + addr,
		"REDIS_AUTH": "secret", "REDIS_SENTINEL_AUTH": "sentinelsecret",
	})
	checkResponse(t, "through sentinel", r.call("extras", desc("small", "s")), ok, wantStatus{ok, 3, minute, 2})
	checkResponse(t, "through sentinel again", r.call("extras", desc("small", "s")), ok, wantStatus{ok, 3, minute, 1})
}
