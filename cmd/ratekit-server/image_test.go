package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/ratekit/testkit/redistest"
)

// TestImage runs the container image make image builds (RATEKIT_IMAGE
// names it) with RATEKIT_CONTAINER (docker unless set; podman with the
// flags its host needs, e.g. "podman --runtime runc"), adding
// RATEKIT_CONTAINER_RUN's flags to its run, against a real
// redis-server, configured as envoyproxy/ratelimit's image is (its
// variables, /data, the host network), replays envoyproxy/ratelimit's
// basic and replaces cases through it, and stops it with SIGTERM, which
// it must exit 0 on. Opt-in: building an image needs a container engine.
func TestImage(t *testing.T) {
	image := os.Getenv("RATEKIT_IMAGE")
	if image == "" {
		t.Skip("RATEKIT_IMAGE is not set: the container image's test is opt-in (make image, docs/server.md)")
	}
	cli := strings.Fields(os.Getenv("RATEKIT_CONTAINER"))
	if len(cli) == 0 {
		cli = []string{"docker"}
	}
	runFlags := strings.Fields(os.Getenv("RATEKIT_CONTAINER_RUN")) // what the host needs: "--ulimit nofile=1024:1024"
	container := func(args ...string) ([]byte, error) {
		return exec.Command(cli[0], append(cli[1:], args...)...).CombinedOutput()
	}
	root := t.TempDir()
	copyDir(t, "testdata/integration", root)
	copyDir(t, "testdata/examples", root)
	if err := os.Chmod(root, 0o755); err != nil { // the image runs as nobody
		t.Fatal(err)
	}
	grpcPort := freePort(t)
	name := fmt.Sprintf("ratekit-image-test-%d", time.Now().UnixNano())
	out, err := container(append(append([]string{"run"}, runFlags...), "-d", "--name", name, "--network", "host", "-v", root+":/data:ro",
		"-e", "USE_STATSD=false", "-e", "REDIS_SOCKET_TYPE=tcp", "-e", "REDIS_URL="+redistest.Start(t).Addr,
		"-e", "RUNTIME_WATCH_ROOT=false", "-e", "HOST=127.0.0.1", "-e", "PORT="+freePort(t),
		"-e", "GRPC_HOST=127.0.0.1", "-e", "GRPC_PORT="+grpcPort, "-e", "DEBUG_HOST=127.0.0.1", "-e", "DEBUG_PORT="+freePort(t),
		"-e", "RATEKIT_DECISION_TIMEOUT=10s", image)...)
	if err != nil {
		t.Fatalf("%s run: %v: %s", cli[0], err, out)
	}
	t.Cleanup(func() {
		if logs, err := container("logs", name); err == nil {
			t.Logf("the container's log:\n%s", logs)
		}
		container("rm", "-f", name)
	})
	r := dialHealthy(t, "127.0.0.1:"+grpcPort, root, 60*time.Second)
	replayBasic(t, r, false)
	replayReplaces(t, r)
	// SIGTERM drains and exits 0.
	if out, err := container("stop", "-t", "30", name); err != nil {
		t.Fatalf("%s stop: %v: %s", cli[0], err, out)
	}
	out, err = container("inspect", "-f", "{{.State.ExitCode}}", name)
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("exit code after SIGTERM: %s (%v), want 0", out, err)
	}
}
