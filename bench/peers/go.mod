module github.com/ratekit/ratekit/bench/peers

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
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/gomodule/redigo v1.9.3
	github.com/ratekit/ratekit v0.0.0
	github.com/ratekit/ratekit/rules v0.0.0
	github.com/ratekit/ratekit/store/goredis v0.0.0
	github.com/ratekit/ratekit/store/redigo v0.0.0
	github.com/ratekit/ratekit/store/rueidis v0.0.0
	github.com/ratekit/ratekit/store/valkey v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/sethvargo/go-limiter v0.7.1
	github.com/throttled/throttled/v2 v2.15.0
	github.com/ulule/limiter/v3 v3.11.2
	github.com/valkey-io/valkey-go v1.0.80
	golang.org/x/time v0.16.0
	gonum.org/v1/plot v0.17.0
)

require go.yaml.in/yaml/v3 v3.0.6 // indirect

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
