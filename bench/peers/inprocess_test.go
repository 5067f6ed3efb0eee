package main

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkInProcess measures the memory store's open limiter of every
// algorithm beside the in-process peers (x/time/rate per key in a
// sync.Map, sethvargo's memorystore) in one run, on the harness's keys,
// from one goroutine and from GOMAXPROCS goroutines:
//
//	go test -run '^$' -bench InProcess -benchmem -count 6 . | benchstat -
//
// Compare ratios within one run: the machine is shared. cpu-ns/op is the
// process's CPU time per decision (all threads), which a busy machine
// disturbs less than ns/op, the wall time: a goroutine waiting for a core
// another process holds costs wall time, not CPU time.
func BenchmarkInProcess(b *testing.B) {
	list, err := ratekitAlgos()
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, numKeys)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	type cs struct {
		name   string
		decide decideFunc
	}
	var cases []cs
	st, closeFn, err := openStore("memory", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer closeFn()
	for _, a := range list {
		l, err := a.open(st, "bench:"+a.name+":")
		if err != nil {
			b.Fatal(err)
		}
		cases = append(cases, cs{"ratekit-" + a.name, allowFunc(l)})
	}
	for _, p := range []string{"x/time/rate", "sethvargo"} {
		d, closeFn, err := openPeer(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer closeFn()
		cases = append(cases, cs{p, d})
	}
	ctx := context.Background()
	for _, c := range cases {
		for _, k := range keys {
			// Every key known (the steady state), stored from a string
			// of its own: each request then brings another, as in a
			// server (see measure).
			c.decide(ctx, strings.Clone(k))
		}
		b.Run(c.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			for i := 0; b.Loop(); i++ {
				if _, err := c.decide(ctx, keys[(i*7919)%numKeys]); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu)
		})
		b.Run(c.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			cpu := cpuTime()
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(104729))
				for pb.Next() {
					i += 7919
					if _, err := c.decide(ctx, keys[i%numKeys]); err != nil {
						b.Error(err)
						return
					}
				}
			})
			reportCPU(b, cpu)
		})
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time used since start per iteration.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
