module github.com/ratekit/ratekit/rules

go 1.26.0

replace github.com/ratekit/ratekit => ..

require (
	github.com/ratekit/ratekit v0.0.0
	go.yaml.in/yaml/v3 v3.0.6
)
