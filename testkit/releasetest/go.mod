module github.com/ratekit/ratekit/testkit/releasetest

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/ratekit/ratekit v0.0.0
	golang.org/x/mod v0.43.0
)
