module github.com/ratekit/ratekit/store/goredis

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/ratekit/ratekit v0.0.0
	github.com/redis/go-redis/v9 v9.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
