// Package readmetest checks that the repository's docs stay true: every
// Go block of README.md and docs/*.md compiles (TestSnippets), every
// relative link names a file (and, into a Markdown file, a heading) that
// exists (TestLinks), every Go name of ratekit's in a code span is
// declared by the code (TestNames), docs/footprint.sh's programs build
// and run (TestFootprint), and the procedures of docs/design.md for
// adding an algorithm or a store, followed on a copy of the repository,
// leave nothing out (TestProcedures).
//
// The rules for a Go block:
//
//   - A block fenced as ```go is compiled. One fenced as ```go-sketch is
//     illustrative (design notes, pseudo-code) and is not; any other info
//     string starting with "go" is an error, so that no block escapes by a
//     typo.
//
//   - A block is a whole file, declarations, or statements. A whole file
//     opens with its package clause (after blank lines and comments) and is
//     compiled as it is: nothing is added, so a reader can paste it and run
//     it. Declarations (a test function, say) are compiled as a file of
//     their own package; statements as the body of a function that returns
//     an error, so `return err` works.
//
//   - A block imports every package it uses, so that a reader sees where
//     each name comes from: import declarations open it, as in a file,
//     statements after them. Nothing is imported for it.
//
//   - ctx (a context.Context) is always defined; any other name a block
//     uses without defining it is declared, with its type, in an HTML
//     comment on the line above the fence:
//
//     <!-- given: store *memory.Store, handler http.Handler -->
//
//     A given type may name any package this file imports below; the
//     block does not import it for that.
//
//   - Errors are checked: a block may not discard a call's last result
//     with _, and the statement after one that assigns err must use it.
//
// Compiler errors name the Markdown file and line. It is a module of its
// own because the blocks use every Redis client, OpenTelemetry and gRPC.
package readmetest

// The packages given types may name, and that keep their modules in
// go.mod for the blocks that import them: a new one is one line here (and,
// if its module is new, a requirement in go.mod).
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

	_ "github.com/ratekit/ratekit/rules"
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
