#!/usr/bin/env bash
# footprint.sh [REPO]: what a program that uses ratekit carries. For tiny
# programs (the memory store; each Redis store; otelratekit; grpclimit;
# rules, deciding on the memory store: valkey, redigo, otelratekit and
# grpclimit only import their module), each a module at
# "go 1.22" that uses ratekit from REPO (default: this repository) through
# replace directives, after go mod tidy: the modules in its graph (go mod
# graph, the program included), in go list -m all, its go.sum lines (none
# for ratekit's own modules, replaced by directories: a published version
# adds two per ratekit module), and the go directive tidy left it with.
# docs/design.md ("Modules") records the figures. Each program is then
# built and run; with FOOTPRINT_REDIS=host:port the go-redis and rueidis
# programs decide on that server, without it they are built only.
# testkit/readmetest's TestFootprint runs it in make test.
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
work=$(mktemp -d)
mods=$(cd "$repo" && find . -name go.mod -not -path './.git/*' | sed 's|^\./||; s|/\?go.mod$||; s|^$|.|')
prog() { # prog NAME < main.go: one program, measured
	local d="$work/$1"; mkdir -p "$d"
	cat > "$d/main.go"
	{
		echo "module example.com/$1"; echo; echo "go 1.22"; echo
		for m in $mods; do
			if [ "$m" = . ]; then echo "replace github.com/ratekit/ratekit => $repo"; echo "require github.com/ratekit/ratekit v0.0.0"
			else echo "replace github.com/ratekit/ratekit/$m => $repo/$m"
				if grep -q "\"github.com/ratekit/ratekit/$m[\"/]" "$d/main.go"; then echo "require github.com/ratekit/ratekit/$m v0.0.0"; fi
			fi
		done
	} > "$d/go.mod"
	(cd "$d" && go mod tidy)
	local graph=$(cd "$d" && go mod graph | tr ' ' '\n' | grep -v '^go@\|^toolchain@' | sort -u | wc -l)
	local all=$(cd "$d" && go list -m all | wc -l)
	local sum=$( [ -f "$d/go.sum" ] && wc -l < "$d/go.sum" || echo 0)
	local godir=$(grep '^go ' "$d/go.mod")
	printf '%-11s graph %3d  list-m-all %3d  go.sum %3d  %s\n' "$1" "$graph" "$all" "$sum" "$godir"
	[ -n "${VERBOSE:-}" ] && (cd "$d" && go list -m all | sed 's/^/    /') || true
	(cd "$d" && go build -o prog .)
	if [ -n "${FOOTPRINT_REDIS:-}" ] || ! grep -q 'os.Args' "$d/main.go"; then
		printf '%-11s ran: %s\n' "$1" "$("$d/prog" "${FOOTPRINT_REDIS:-}")"
	fi
}
prog memory <<'G'
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	"github.com/ratekit/ratekit/store/memory"
)

func main() {
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer store.Close()
	l, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second})
	if err != nil {
		panic(err)
	}
	d, err := l.Allow(context.Background(), "k")
	if err != nil {
		panic(err)
	}
	fmt.Println("allowed", d.Allowed, "remaining", d.Remaining)
}
G
prog goredis <<'G'
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	goredisstore "github.com/ratekit/ratekit/store/goredis"
	"github.com/redis/go-redis/v9"
)

func main() {
	rdb := redis.NewClient(&redis.Options{Addr: os.Args[1], MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rdb.Close()
	store, err := goredisstore.New(rdb)
	if err != nil {
		panic(err)
	}
	l, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second, Prefix: "footprint:goredis:"})
	if err != nil {
		panic(err)
	}
	d, err := l.Allow(context.Background(), "k")
	if err != nil {
		panic(err)
	}
	fmt.Println("allowed", d.Allowed, "remaining", d.Remaining)
}
G
prog rueidis <<'G'
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ratekit/ratekit/algorithms/tokenbucket"
	rueidisstore "github.com/ratekit/ratekit/store/rueidis"
	"github.com/redis/rueidis"
)

func main() {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{os.Args[1]}, DisableCache: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	store, err := rueidisstore.New(c)
	if err != nil {
		panic(err)
	}
	l, err := tokenbucket.New(store, tokenbucket.Config{Capacity: 3, RefillRate: 1, RefillInterval: time.Second, Prefix: "footprint:rueidis:"})
	if err != nil {
		panic(err)
	}
	d, err := l.Allow(context.Background(), "k")
	if err != nil {
		panic(err)
	}
	fmt.Println("allowed", d.Allowed, "remaining", d.Remaining)
}
G
for m in valkey redigo; do prog "$m" <<G
package main

import (
	"fmt"

	_ "github.com/ratekit/ratekit/store/$m"
)

func main() { fmt.Println("ok") }
G
done
for m in otelratekit grpclimit; do prog "$m" <<G
package main

import (
	"fmt"

	_ "github.com/ratekit/ratekit/$m"
)

func main() { fmt.Println("ok") }
G
done
prog rules <<'G'
package main

import (
	"context"
	"fmt"

	"github.com/ratekit/ratekit/rules"
	"github.com/ratekit/ratekit/store/memory"
)

func main() {
	cfg, err := rules.Parse([]rules.File{{Name: "f.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 3}\n")}}, rules.LoadOptions{})
	if err != nil {
		panic(err)
	}
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	defer store.Close()
	r, err := rules.New(store, cfg, rules.Options{})
	if err != nil {
		panic(err)
	}
	res, err := r.Decide(context.Background(), "d", []rules.Descriptor{{Entries: []rules.Entry{{Key: "k", Value: "v"}}}}, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println("allowed", res.Allowed, "remaining", res.Statuses[0].Remaining)
}
G
rm -rf "$work"
