#!/bin/sh
# make bench-rls: ratekit-server beside envoyproxy/ratelimit, built from
# its Go module, on one redis-server, with the same rules (bench.yaml) and
# the same load generator (rlsload): decisions/s and latency for each
# request mix, then exactness (3 processes of each, one key, limit 1000,
# 3000 calls). It prints its results; figures are not committed.
#
# BENCH_DURATION (10s), BENCH_CONCURRENCY (64), ENVOY_RLS_VERSION.
set -eu
cd "$(dirname "$0")"
: "${BENCH_DURATION:=10s}" "${BENCH_CONCURRENCY:=64}"
: "${ENVOY_RLS_VERSION:=v1.4.1-0.20260122083618-3fb702589d36}"

work=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT INT TERM

go build -o "$work/ratekit-server" .
go build -o "$work/rlsload" ./rlsload
GOBIN="$work" go install "github.com/envoyproxy/ratelimit/src/service_cmd@$ENVOY_RLS_VERSION"

mkdir -p "$work/runtime/ratelimit/config"
cp bench.yaml "$work/runtime/ratelimit/config/bench.yaml"
set -- $("$work/rlsload" -freeports 19)

redis_port=$1; shift
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
pids="$pids $!"

common="USE_STATSD=false LOG_LEVEL=error REDIS_SOCKET_TYPE=tcp REDIS_URL=127.0.0.1:$redis_port
RUNTIME_ROOT=$work/runtime RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false
HOST=127.0.0.1 GRPC_HOST=127.0.0.1 DEBUG_HOST=127.0.0.1"

# start NAME BINARY: one server process on the next three ports; prints its gRPC address.
start() {
	grpc=$1 http=$2 debug=$3
	env $common GRPC_PORT="$grpc" PORT="$http" DEBUG_PORT="$debug" RATEKIT_DECISION_TIMEOUT=1s "$4" >>"$work/$5.log" 2>&1 &
	pids="$pids $!"
}

start "$1" "$2" "$3" "$work/ratekit-server" ratekit; rk=127.0.0.1:$1; shift 3
start "$1" "$2" "$3" "$work/service_cmd" envoy; ev=127.0.0.1:$1; shift 3
"$work/rlsload" -wait -addrs "$rk,$ev"

echo "envoyproxy/ratelimit $ENVOY_RLS_VERSION and ratekit-server, one redis-server, $(nproc) CPUs, $BENCH_CONCURRENCY callers, $BENCH_DURATION each"
for mix in one three over; do
	printf 'ratekit-server       '; "$work/rlsload" -addrs "$rk" -mix "$mix" -c "$BENCH_CONCURRENCY" -d "$BENCH_DURATION"
	printf 'envoyproxy/ratelimit '; "$work/rlsload" -addrs "$ev" -mix "$mix" -c "$BENCH_CONCURRENCY" -d "$BENCH_DURATION"
done

# Exactness: two more processes of each, every call of one key spread over the three.
start "$1" "$2" "$3" "$work/ratekit-server" ratekit; rk="$rk,127.0.0.1:$1"; shift 3
start "$1" "$2" "$3" "$work/ratekit-server" ratekit; rk="$rk,127.0.0.1:$1"; shift 3
start "$1" "$2" "$3" "$work/service_cmd" envoy; ev="$ev,127.0.0.1:$1"; shift 3
start "$1" "$2" "$3" "$work/service_cmd" envoy; ev="$ev,127.0.0.1:$1"; shift 3
"$work/rlsload" -wait -addrs "$rk,$ev"
printf 'ratekit-server, 3 processes, limit 1000:       '; "$work/rlsload" -addrs "$rk" -n 3000 -c "$BENCH_CONCURRENCY"
printf 'envoyproxy/ratelimit, 3 processes, limit 1000: '; "$work/rlsload" -addrs "$ev" -n 3000 -c "$BENCH_CONCURRENCY"
