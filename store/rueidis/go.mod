module github.com/ratekit/ratekit/store/rueidis

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/alicebob/miniredis/v2 v2.36.0
	github.com/ratekit/ratekit v0.0.0
	github.com/redis/rueidis v1.0.59
)

require (
	github.com/yuin/gopher-lua v1.1.1 // indirect
	golang.org/x/sys v0.31.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
