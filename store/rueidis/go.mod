module github.com/ratekit/ratekit/store/rueidis

go 1.26.0

replace github.com/ratekit/ratekit => ../..

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/ratekit/ratekit v0.0.0
	github.com/redis/rueidis v1.0.79
)

require (
	github.com/onsi/gomega v1.44.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
