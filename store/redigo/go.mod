module github.com/ratekit/ratekit/store/redigo

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/gomodule/redigo v1.9.3
	github.com/ratekit/ratekit v0.0.0
)

require (
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
