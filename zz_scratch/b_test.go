package zz

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/store/memory"
)

func BenchmarkTB(b *testing.B) {
	s, _ := memory.New(memory.WithSweepInterval(0))
	l, err := tokenbucket.New(s, tokenbucket.Config{Capacity: 1 << 30, RefillRate: 1 << 30, RefillInterval: time.Second, Prefix: "bench:tb:"})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Allow(ctx, keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
	}
}
