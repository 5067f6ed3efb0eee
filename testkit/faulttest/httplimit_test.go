package faulttest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ratekit/ratekit/algorithms/fixedwindow"
	"github.com/ratekit/ratekit/httplimit"
	"github.com/ratekit/ratekit/testkit/redistest"
)

// The middleware over a real redis-server, through each Redis client: the
// third request in the window is refused, and every response carries the
// policy.
func TestHTTPLimitOverRedis(t *testing.T) {
	srv := redistest.Start(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			lim, err := fixedwindow.New(a.open(t, srv.Addr), fixedwindow.Config{Limit: 2, Window: time.Minute, Prefix: "http:" + a.name + ":"})
			if err != nil {
				t.Fatal(err)
			}
			mw, err := httplimit.New(httplimit.Config{Limiter: lim, Name: "fw", Timeout: decideTimeout})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(mw(ok))
			defer ts.Close()
			var codes []int
			for i := 0; i < 3; i++ {
				resp, err := http.Get(ts.URL)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				codes = append(codes, resp.StatusCode)
				if resp.Header.Get("RateLimit-Policy") != `"fw";q=2;w=60` {
					t.Fatalf("RateLimit-Policy %q", resp.Header.Get("RateLimit-Policy"))
				}
			}
			if fmt.Sprint(codes) != "[200 200 429]" {
				t.Fatalf("codes %v", codes)
			}
		})
	}
}
