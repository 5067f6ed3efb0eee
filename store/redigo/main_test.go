package redigostore_test

import (
	"testing"

	"github.com/ratekit/ratekit/testkit/redistest"
)

// TestMain stops the servers the examples and the cluster tests started.
func TestMain(m *testing.M) { redistest.Main(m) }

// redisAddr is the address of a Redis for an example: a fresh redis-server.
var redisAddr = redistest.ExampleAddr
