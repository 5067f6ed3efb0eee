package rueidisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratekit/ratekit/internal/testkit/adaptertest"
	"github.com/ratekit/ratekit/internal/testkit/redistest"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
)

func TestAdapter(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv.Addr)
	// A client for a server that dies right after the client connects.
	doomed := redistest.Start(t)
	dead := newClient(t, doomed.Addr)
	doomed.Kill()
	t.Run("KeyLending", func(t *testing.T) { adaptertest.KeyLending(t, rueidisstore.New(c), true) })
	adaptertest.Run(t, adaptertest.Harness{
		Runner:  rueidisstore.New(c),
		Dead:    rueidisstore.New(dead),
		OneNode: true,
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

// nilClient is a rueidis.Client implementation whose nil pointer is a
// typed nil inside the interface.
type nilClient struct{ rueidis.Client }

func TestUnusable(t *testing.T) {
	adaptertest.Unusable(t, rueidisstore.New(nil), "nil client")
	adaptertest.Unusable(t, rueidisstore.New((*nilClient)(nil)), "nil *rueidisstore_test.nilClient")
	adaptertest.Unusable(t, &rueidisstore.Runner{}, "zero Runner")
	adaptertest.Unusable(t, (*rueidisstore.Runner)(nil), "nil Runner")
}
