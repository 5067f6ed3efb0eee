package redistest

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
)

// The servers ExampleAddr started, stopped by Main.
var examples struct {
	mu      sync.Mutex
	servers []*Server
}

// Main runs a package's tests and examples (call it from TestMain) and
// exits with their code. Examples, which cannot take a *testing.T, get
// their servers from ExampleAddr; Main stops them, and the shared cluster,
// when m is done. Without a server (see the package doc), Main fails under
// CI=true or with RATEKIT_REDIS_SERVER set, and elsewhere skips the
// examples (it adds ^Example to -test.skip), loudly; the tests fail or skip
// as Start says.
func Main(m *testing.M) {
	flag.Parse()
	if err := skipExamples(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopExamples()
	StopSharedCluster()
	os.Exit(code)
}

// skipExamples adds ^Example to -test.skip when there is no server, or
// returns an error under CI=true or with RATEKIT_REDIS_SERVER set.
func skipExamples() error {
	_, err := serverCommand()
	if err == nil {
		return nil
	}
	if os.Getenv(EnvServer) != "" {
		return err
	}
	if os.Getenv("CI") == "true" {
		return fmt.Errorf("redistest: redis-server not found on PATH under CI=true: %v", err)
	}
	fmt.Fprintf(os.Stderr, "redistest: SKIPPING the examples: redis-server not found on PATH (%v); install it, e.g. apt-get install -y redis-server\n", err)
	f := flag.Lookup("test.skip")
	if f == nil {
		return fmt.Errorf("redistest: Main runs only in a test binary (no -test.skip flag)")
	}
	skip := "^Example"
	if s := f.Value.String(); s != "" {
		skip = s + "|" + skip
	}
	return f.Value.Set(skip)
}

// ExampleAddr starts a redis-server for one example and returns its
// address; Main stops it when the package's tests end. Each call starts a
// fresh server, so that an example prints the same under -count=2. It
// panics if the server cannot start: an example has no other way to fail.
func ExampleAddr() string {
	bin, err := serverCommand()
	if err != nil {
		panic(fmt.Sprintf("redistest: no server for an example: %v", err))
	}
	dir, err := os.MkdirTemp("", "redistest-example-")
	if err != nil {
		panic(fmt.Sprintf("redistest: %v", err))
	}
	s, err := launch(bin, dir)
	if err != nil {
		os.RemoveAll(dir)
		panic(fmt.Sprintf("redistest: cannot start redis-server for an example: %v", err))
	}
	examples.mu.Lock()
	examples.servers = append(examples.servers, s)
	examples.mu.Unlock()
	return s.Addr
}

// stopExamples kills the servers ExampleAddr started and removes their
// directories.
func stopExamples() {
	examples.mu.Lock()
	defer examples.mu.Unlock()
	for _, s := range examples.servers {
		s.Kill()
		os.RemoveAll(s.dir)
	}
	examples.servers = nil
}
