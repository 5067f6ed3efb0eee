package rueidisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/internal/adaptertest"
	"github.com/ratekit/ratekit/internal/redistest"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
)

func TestAdapter(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	// A client for a server that dies right after the client connects.
	doomed := redistest.Start(t)
	dead := newClient(t, doomed.Addr)
	doomed.Kill()
	adaptertest.Run(t, adaptertest.Harness{
		Runner: rueidisstore.New(c),
		Dead:   rueidisstore.New(dead),
		Do: func(ctx context.Context, args ...string) (string, error) {
			res := c.Do(ctx, c.B().Arbitrary(args...).Build())
			if rueidis.IsRedisNil(res.Error()) {
				return "", nil
			}
			if n, err := res.AsInt64(); err == nil {
				return fmt.Sprint(n), nil
			}
			return res.ToString()
		},
	})
}
