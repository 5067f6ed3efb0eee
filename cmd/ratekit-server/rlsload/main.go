// Command rlsload drives an Envoy rate limit service (RLS v3) with
// concurrent ShouldRateLimit calls and reports decisions per second and
// latency percentiles, the same way for ratekit-server and for
// envoyproxy/ratelimit: bench.sh runs it against both, side by side.
//
//	rlsload -addrs localhost:8081 -mix one -c 64 -d 10s
//
// Mixes (domain "bench" of bench.yaml): one (one descriptor), three (three
// descriptors), over (one descriptor, one call in ten to a key 10 a second
// lets through). With -n, it sends exactly n calls of "exact" (one key,
// spread over every address) and prints how many were allowed.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	addrs := flag.String("addrs", "localhost:8081", "comma-separated gRPC addresses, called in turn")
	mix := flag.String("mix", "one", "one, three or over")
	conc := flag.Int("c", 64, "concurrent callers")
	dur := flag.Duration("d", 10*time.Second, "how long to run")
	n := flag.Int("n", 0, "with n > 0: send exactly n calls to one key (exact) and print how many were allowed")
	conns := flag.Int("conns", 4, "gRPC connections per address")
	wait := flag.Bool("wait", false, "wait until every address answers its health check (30 s at most), then exit")
	ports := flag.Int("freeports", 0, "print this many free TCP ports on the loopback, then exit")
	flag.Parse()

	if *ports > 0 {
		freePorts(*ports)
		return
	}
	if *wait {
		waitHealthy(strings.Split(*addrs, ","))
		return
	}

	var clients []rlsv3.RateLimitServiceClient
	for _, a := range strings.Split(*addrs, ",") {
		for range *conns {
			conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			defer conn.Close()
			clients = append(clients, rlsv3.NewRateLimitServiceClient(conn))
		}
	}
	if *n > 0 {
		exact(clients, *conc, *n)
		return
	}
	load(clients, *mix, *conc, *dur)
}

func desc(k, v string) *commonv3.RateLimitDescriptor {
	return &commonv3.RateLimitDescriptor{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: k, Value: v}}}
}

func request(mix string, r *rand.Rand) *rlsv3.RateLimitRequest {
	user := strconv.Itoa(r.IntN(10000))
	req := &rlsv3.RateLimitRequest{Domain: "bench", HitsAddend: 1}
	switch mix {
	case "three":
		req.Descriptors = []*commonv3.RateLimitDescriptor{desc("user", user), desc("path", strconv.Itoa(r.IntN(100))), desc("tenant", strconv.Itoa(r.IntN(10)))}
	case "over":
		if r.IntN(10) == 0 {
			req.Descriptors = []*commonv3.RateLimitDescriptor{desc("hot", strconv.Itoa(r.IntN(10)))}
		} else {
			req.Descriptors = []*commonv3.RateLimitDescriptor{desc("user", user)}
		}
	default:
		req.Descriptors = []*commonv3.RateLimitDescriptor{desc("user", user)}
	}
	return req
}

func load(clients []rlsv3.RateLimitServiceClient, mix string, conc int, dur time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var errs, over atomic.Int64
	lat := make([][]time.Duration, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			c := clients[i%len(clients)]
			for ctx.Err() == nil {
				req := request(mix, r)
				t := time.Now()
				resp, err := c.ShouldRateLimit(context.Background(), req)
				lat[i] = append(lat[i], time.Since(t))
				if err != nil {
					errs.Add(1)
				} else if resp.GetOverallCode() == rlsv3.RateLimitResponse_OVER_LIMIT {
					over.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	fmt.Printf("mix=%s c=%d calls=%d decisions/s=%.0f p50_us=%d p99_us=%d over=%d errors=%d\n",
		mix, conc, len(all), float64(len(all))/elapsed.Seconds(), pct(0.50).Microseconds(), pct(0.99).Microseconds(), over.Load(), errs.Load())
}

// exact sends n calls on one key (rule "exact" of bench.yaml), spread over
// every client, and prints how many were allowed.
func exact(clients []rlsv3.RateLimitServiceClient, conc, n int) {
	var next, allowed, errs atomic.Int64
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				c := clients[int(next.Load())%len(clients)]
				resp, err := c.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{
					Domain: "bench", HitsAddend: 1, Descriptors: []*commonv3.RateLimitDescriptor{desc("exact", "one")}})
				if err != nil {
					errs.Add(1)
				} else if resp.GetOverallCode() == rlsv3.RateLimitResponse_OK {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("exact: calls=%d allowed=%d errors=%d\n", n, allowed.Load(), errs.Load())
}

func freePorts(n int) {
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ls = append(ls, l)
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
}

func waitHealthy(addrs []string) {
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		h := healthpb.NewHealthClient(conn)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
			cancel()
			if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "%s not healthy after 30s: %v\n", a, err)
				os.Exit(1)
			}
			time.Sleep(100 * time.Millisecond)
		}
		conn.Close()
	}
}
