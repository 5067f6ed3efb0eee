module github.com/ratekit/ratekit/store/goredis

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/ratekit/ratekit v0.0.0
	github.com/redis/go-redis/v9 v9.6.0
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
