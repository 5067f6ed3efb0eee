module github.com/ratekit/ratekit/testkit/faulttest

go 1.26.0

replace (
	github.com/ratekit/ratekit => ../..
	github.com/ratekit/ratekit/rules => ../../rules
	github.com/ratekit/ratekit/store/goredis => ../../store/goredis
	github.com/ratekit/ratekit/store/redigo => ../../store/redigo
	github.com/ratekit/ratekit/store/rueidis => ../../store/rueidis
	github.com/ratekit/ratekit/store/valkey => ../../store/valkey
)

require (
	github.com/gomodule/redigo v1.9.3
	github.com/ratekit/ratekit v0.0.0
	github.com/ratekit/ratekit/rules v0.0.0
	github.com/ratekit/ratekit/store/goredis v0.0.0
	github.com/ratekit/ratekit/store/redigo v0.0.0
	github.com/ratekit/ratekit/store/rueidis v0.0.0
	github.com/ratekit/ratekit/store/valkey v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/valkey-io/valkey-go v1.0.80
	go.uber.org/goleak v1.3.0
	google.golang.org/grpc v1.81.1
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.43.0 // indirect
	go.opentelemetry.io/otel/metric v1.43.0 // indirect
	go.opentelemetry.io/otel/trace v1.43.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260226221140-a57be14db171 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/ratekit/ratekit/grpclimit v0.0.0
	github.com/ratekit/ratekit/otelratekit v0.0.0
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)

replace github.com/ratekit/ratekit/grpclimit => ../../grpclimit

replace github.com/ratekit/ratekit/otelratekit => ../../otelratekit
