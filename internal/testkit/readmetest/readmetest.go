// Package readmetest compiles every Go snippet of the repository's
// README.md (every ```go block), so that none refers to a name it does not
// define, ignores an error, or falls behind the API.
//
// A snippet is either Go declarations (a test function, say) or
// statements; statements are compiled as the body of a function that
// returns an error, so `return err` works. A snippet may import packages
// itself (redigo's, named redis like go-redis', must be); any other
// package it uses must be one this file imports below, and is imported for
// it by its package name. ctx (a context.Context) is
// always defined; any other name a snippet uses without defining it is
// declared, with its type, in an HTML comment on the line above the fence:
//
//	<!-- given: store *memory.Store, handler http.Handler -->
//
// Errors must be checked: a snippet may not discard a call's last result
// with _, and the statement after one that assigns err must use it.
//
// It is a module of its own because the snippets use every Redis client,
// OpenTelemetry and gRPC.
package readmetest

// The packages a snippet may use without importing them itself: a new one
// is one line here (and, if its module is new, a requirement in go.mod).
import (
	_ "context"
	_ "errors"
	_ "fmt"
	_ "log"
	_ "log/slog"
	_ "net"
	_ "net/http"
	_ "net/netip"
	_ "os"
	_ "strings"
	_ "sync"
	_ "testing"
	_ "time"

	_ "github.com/redis/go-redis/v9"
	_ "github.com/redis/rueidis"
	_ "github.com/valkey-io/valkey-go"
	_ "go.opentelemetry.io/otel/metric"
	_ "go.opentelemetry.io/otel/trace"
	_ "google.golang.org/grpc"

	_ "github.com/ratekit/ratekit"
	_ "github.com/ratekit/ratekit/algorithms"
	_ "github.com/ratekit/ratekit/algorithms/concurrency"
	_ "github.com/ratekit/ratekit/algorithms/fixedwindow"
	_ "github.com/ratekit/ratekit/algorithms/gcra"
	_ "github.com/ratekit/ratekit/algorithms/leakybucket"
	_ "github.com/ratekit/ratekit/algorithms/slidingcounter"
	_ "github.com/ratekit/ratekit/algorithms/slidinglog"
	_ "github.com/ratekit/ratekit/algorithms/tokenbucket"
	_ "github.com/ratekit/ratekit/conformance"
	_ "github.com/ratekit/ratekit/core"
	_ "github.com/ratekit/ratekit/denycache"
	_ "github.com/ratekit/ratekit/failsafe"
	_ "github.com/ratekit/ratekit/fakeclock"
	_ "github.com/ratekit/ratekit/grpclimit"
	_ "github.com/ratekit/ratekit/hotkey"
	_ "github.com/ratekit/ratekit/httplimit"
	_ "github.com/ratekit/ratekit/otelratekit"
	_ "github.com/ratekit/ratekit/store/goredis"
	_ "github.com/ratekit/ratekit/store/memory"
	_ "github.com/ratekit/ratekit/store/redigo"
	_ "github.com/ratekit/ratekit/store/rueidis"
	_ "github.com/ratekit/ratekit/store/valkey"
)
