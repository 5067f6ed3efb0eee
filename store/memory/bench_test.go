package memory_test

import (
	"testing"

	"github.com/ratekit/ratekit/internal/testkit/benchutil"
	"github.com/ratekit/ratekit/store/memory"
)

func BenchmarkTokenBucket(b *testing.B) {
	s, err := memory.New()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	benchutil.TokenBucket(b, s)
}
