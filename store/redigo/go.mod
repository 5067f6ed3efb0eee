module github.com/ratekit/ratekit/store/redigo

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/alicebob/miniredis/v2 v2.36.0
	github.com/gomodule/redigo v1.8.8
	github.com/ratekit/ratekit v0.0.0
)

require (
	github.com/yuin/gopher-lua v1.1.1 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
