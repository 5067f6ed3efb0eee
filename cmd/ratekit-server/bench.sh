#!/bin/sh
# make bench-rls: ratekit-server beside envoyproxy/ratelimit, built from
# its Go module, with the same rules (bench.yaml) and the same load
# generator (rlsload), first on one redis-server, then on a 3-master Redis
# Cluster: decisions/s and p99 latency for each request mix, the two
# servers in turn, BENCH_ROUNDS times, then the medians and their ratio;
# then exactness (3 processes of each on one redis-server, one key, limit
# 1000, 3000 calls). It prints its results and the load average; with
# BENCH_WRITE=1 it also writes them as the last section of
# bench/RESULTS.md (which make bench keeps): do that from a quiet run only.
#
# BENCH_DURATION (10s), BENCH_CONCURRENCY (64), BENCH_ROUNDS (3),
# ENVOY_RLS_VERSION, BENCH_WRITE.
set -eu
cd "$(dirname "$0")"
: "${BENCH_DURATION:=10s}" "${BENCH_CONCURRENCY:=64}" "${BENCH_ROUNDS:=3}"
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

ports=$("$work/rlsload" -freeports 40)
# nextport sets port to the next free port.
nextport() { set -- $ports; port=$1; shift; ports=$*; }

# Redis: one server, and a cluster of three masters (their bus ports
# given, so that none is above 65535).
nextport; single=127.0.0.1:$port
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
pids="$pids $!"
cluster=""
for i in 1 2 3; do
	nextport; p=$port; nextport
	mkdir "$work/node$i"
	redis-server --port "$p" --cluster-port "$port" --cluster-enabled yes --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$work/node$i" >"$work/node$i.log" 2>&1 &
	pids="$pids $!"
	cluster="$cluster${cluster:+,}127.0.0.1:$p"
done
sleep 1
redis-cli --cluster create $(echo "$cluster" | tr ',' ' ') --cluster-replicas 0 --cluster-yes >"$work/cluster.log" 2>&1
p=${cluster%%,*}
for _ in $(seq 100); do
	redis-cli -h 127.0.0.1 -p "${p#*:}" cluster info | grep -q 'cluster_state:ok' && break
	sleep 0.1
done

# start BINARY TYPE URL: one server process on the next three ports,
# whose gRPC address is then $addr.
start() {
	nextport; grpc=$port; nextport; http=$port; nextport
	env USE_STATSD=false LOG_LEVEL=error REDIS_SOCKET_TYPE=tcp REDIS_TYPE="$2" REDIS_URL="$3" \
		RUNTIME_ROOT="$work/runtime" RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false \
		HOST=127.0.0.1 GRPC_HOST=127.0.0.1 DEBUG_HOST=127.0.0.1 GRPC_PORT="$grpc" PORT="$http" DEBUG_PORT="$port" \
		RATEKIT_DECISION_TIMEOUT=1s "$1" >>"$work/$(basename "$1").log" 2>&1 &
	pids="$pids $!"
	addr=127.0.0.1:$grpc
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "envoyproxy/ratelimit $ENVOY_RLS_VERSION beside ratekit-server, $(nproc) CPUs, $BENCH_CONCURRENCY callers, $BENCH_DURATION a run, $BENCH_ROUNDS rounds"
results=$work/results
for redis in single cluster; do
	url=$single
	[ "$redis" = cluster ] && url=$cluster
	start "$work/ratekit-server" "$redis" "$url"; rk=$addr
	start "$work/service_cmd" "$redis" "$url"; ev=$addr
	"$work/rlsload" -wait -addrs "$rk,$ev"
	for round in $(seq "$BENCH_ROUNDS"); do
		echo "round $round, Redis $redis, load average $(cut -d' ' -f1-3 /proc/loadavg)"
		for mix in one three over; do
			for side in ratekit-server envoyproxy/ratelimit; do
				a=$rk
				[ "$side" = envoyproxy/ratelimit ] && a=$ev
				line=$("$work/rlsload" -addrs "$a" -mix "$mix" -c "$BENCH_CONCURRENCY" -d "$BENCH_DURATION")
				printf '  %-21s %s\n' "$side" "$line"
				echo "$redis $side $line" >>"$results"
			done
		done
	done
done

# The medians of each (Redis, mix, server), and ratekit-server's ratio.
echo "medians of $BENCH_ROUNDS rounds (ratio: ratekit-server's over envoyproxy/ratelimit's):"
awk '
	function field(name,   i) { for (i = 3; i <= NF; i++) if (index($i, name "=") == 1) return substr($i, length(name) + 2); return "" }
	function median(list,   a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return a[int((n + 1) / 2)]
	}
	{ k = $1 " " field("mix"); s = $2; rate[k, s] = rate[k, s] " " field("decisions/s"); p99[k, s] = p99[k, s] " " field("p99_us"); keys[k] = 1 }
	END {
		for (k in keys) {
			r = median(rate[k, "ratekit-server"]); e = median(rate[k, "envoyproxy/ratelimit"])
			rp = median(p99[k, "ratekit-server"]); ep = median(p99[k, "envoyproxy/ratelimit"])
			split(k, rm, " ")
			printf "| %s | %s | %.0f | %.1f | %.0f | %.1f | %.2fx | %.2fx |\n", rm[1], rm[2], r, rp / 1000, e, ep / 1000, r / e, rp / ep
		}
	}' "$results" | sort >"$work/medians"
{
	echo "| Redis | mix | ratekit-server decisions/s | p99 ms | envoyproxy/ratelimit decisions/s | p99 ms | ratio | p99 ratio |"
	echo "|---|---|---|---|---|---|---|---|"
	cat "$work/medians"
} | tee "$work/table"

# Exactness: three processes of each on one redis-server, every call of
# one key spread over the three.
rk="" ev=""
for _ in 1 2 3; do
	start "$work/ratekit-server" single "$single"; rk="$rk${rk:+,}$addr"
	start "$work/service_cmd" single "$single"; ev="$ev${ev:+,}$addr"
done
"$work/rlsload" -wait -addrs "$rk,$ev"
exact_rk=$("$work/rlsload" -addrs "$rk" -n 3000 -c "$BENCH_CONCURRENCY")
exact_ev=$("$work/rlsload" -addrs "$ev" -n 3000 -c "$BENCH_CONCURRENCY")
echo "ratekit-server, 3 processes, limit 1000:       $exact_rk"
echo "envoyproxy/ratelimit, 3 processes, limit 1000: $exact_ev"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average at the end: $load_end"

[ "${BENCH_WRITE:-}" = 1 ] || exit 0
out=../../bench/RESULTS.md
marker='<!-- make bench-rls -->'
kept=$(awk -v m="$marker" 'index($0, m) == 1 { exit } { print }' "$out")
{
	printf '%s\n\n' "$kept"
	echo "$marker"
	echo "## ratekit-server beside envoyproxy/ratelimit"
	echo
	echo "Made by \`BENCH_WRITE=1 make bench-rls\` (\`cmd/ratekit-server/bench.sh\`), $started: envoyproxy/ratelimit $ENVOY_RLS_VERSION (built from its Go module) and ratekit-server with the same rules (\`cmd/ratekit-server/bench.yaml\`), first on one redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), then on a 3-master Redis Cluster of the same; the two servers driven in turn by the same gRPC load generator (\`rlsload\`, $BENCH_CONCURRENCY callers on 4 connections), $BENCH_DURATION a run, $BENCH_ROUNDS rounds, medians. Servers, Redis and load generator share $(nproc) CPUs. Load average $load_start at the start, $load_end at the end. Mixes: one descriptor; three descriptors of three rules; one descriptor, one call in ten on a key of 10 a second (over its limit)."
	echo
	cat "$work/table"
	echo
	echo "Exactness: three processes of each on one redis-server, one key of limit 1000 an hour, 3000 concurrent calls spread over them: ratekit-server \`${exact_rk#exact: }\`; envoyproxy/ratelimit \`${exact_ev#exact: }\`."
} >"$out.new"
mv "$out.new" "$out"
echo "wrote $out"
