module github.com/ratekit/ratekit/store/redigo

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/gomodule/redigo v1.8.8
	github.com/ratekit/ratekit v0.0.0
)

require pgregory.net/rapid v1.3.0 // indirect
