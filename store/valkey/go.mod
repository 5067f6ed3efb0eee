module github.com/ratekit/ratekit/store/valkey

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/ratekit/ratekit v0.0.0
	github.com/valkey-io/valkey-go v1.0.67
)

require (
	golang.org/x/sys v0.31.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
