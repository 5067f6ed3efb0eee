module github.com/ratekit/ratekit/testkit/miniredistest

go 1.26.0

replace (
	github.com/ratekit/ratekit => ../..
	github.com/ratekit/ratekit/store/goredis => ../../store/goredis
	github.com/ratekit/ratekit/store/redigo => ../../store/redigo
	github.com/ratekit/ratekit/store/rueidis => ../../store/rueidis
	github.com/ratekit/ratekit/store/valkey => ../../store/valkey
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/gomodule/redigo v1.8.8
	github.com/ratekit/ratekit v0.0.0
	github.com/ratekit/ratekit/store/goredis v0.0.0
	github.com/ratekit/ratekit/store/redigo v0.0.0
	github.com/ratekit/ratekit/store/rueidis v0.0.0
	github.com/ratekit/ratekit/store/valkey v0.0.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/redis/rueidis v1.0.59
	github.com/valkey-io/valkey-go v1.0.67
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.31.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
