# ratekit: make test and make oldest-go are what CI runs (.ci/run). See README.md.
GO ?= go
# Property-based runs (pgregory.net/rapid): checks per property and steps
# per check. make test keeps them lean; make soak raises them.
RAPID_CHECKS ?= 100
RAPID_STEPS ?= 30
export RAPID_CHECKS RAPID_STEPS

# Every Go module of the repository (a directory with a go.mod): the
# library at the root and the modules that carry heavy dependencies (the
# demo with its browser test, the benchmark harness, ...). ./... stops at a
# nested module, so test and vet visit each one.
MODULES := $(sort $(patsubst ./%,%,$(patsubst %/go.mod,%,$(shell find . -name go.mod -not -path './.git/*'))))

.PHONY: test test-saturated test-default test-servers fmt-check vet oldest-go soak bench bench-instructions bench-rls image gobench fuzz release

# The modules a program imports: all but the demo, the benchmark harness
# and the test-only modules under testkit/.
LIBRARY_MODULES := $(filter-out cmd/% bench/% testkit/%,$(MODULES))

# The oldest Go the modules support: their go directive (the same in every
# go.mod; TestGoDirective checks it). oldest-go vets the library modules
# and runs the root module's tests (no -race) with that release, which the
# go command fetches from the module proxy as GOTOOLCHAIN asks; make test
# runs everything with the installed Go.
GO_MIN := $(shell sed -n 's/^go //p' go.mod)

# Modules tested at once; each module's output is printed whole, in
# MODULES' order, when all are done.
TEST_JOBS ?= 3

# The modules whose tests take longest, slowest first (go test -json under
# make test-saturated: the rapid conformance suites on miniredis and on
# each Redis client, the fault tests, the memory store's suites in the
# root module), started before the others. In MODULES' order the slowest,
# testkit/miniredistest, started only once a dozen modules had passed, and
# the run waited for it at the end.
SLOW_MODULES := testkit/miniredistest store/goredis testkit/faulttest store/rueidis .
TEST_ORDER := $(filter $(MODULES),$(SLOW_MODULES)) $(filter-out $(SLOW_MODULES),$(MODULES))

# make test: every module's tests on the default server (redis-server on
# PATH), and at the same time the Redis stores' on every other server
# (test-servers); each part's output is printed whole when it is done.
test: fmt-check vet
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-default test-servers

# make test-saturated: make test while HOGS CPU-bound processes run beside
# it, stopped when it ends: a test that fails only then depends on the
# machine's speed (docs/contributing.md). Run it before a change that
# touches timing.
HOGS ?= 2
test-saturated:
	@pids=; for i in $$(seq $(HOGS)); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	trap 'kill $$pids 2>/dev/null' EXIT INT TERM; \
	echo "test-saturated: make test beside $(HOGS) CPU-bound processes;$$(uptime | sed 's/.*,  *load/ load/')"; \
	start=$$(date +%s); $(MAKE) --no-print-directory test; status=$$?; \
	echo "test-saturated: make test exited $$status after $$(( $$(date +%s) - start )) s;$$(uptime | sed 's/.*,  *load/ load/')"; \
	exit $$status

# Everything, -race, on the default server: the fault, contention and
# seed tests, the tests on miniredis, the rapid checks in full. The
# timeout only stops a hung run: the suite on miniredis took 634 s in CI
# and 1800 s under make test-saturated beside other work (load average 14
# to 46 on 2 cores), where a 30 m timeout failed it.
test-default:
	@dir=$$(mktemp -d); \
	printf '%s\n' $(TEST_ORDER) | xargs -P $(TEST_JOBS) -I{} sh -c \
		'f="$$1/$$(echo {} | tr / _)"; cd {} && $(GO) test -race -count=1 -timeout 60m ./... >"$$f.log" 2>&1 || touch "$$f.failed"' _ "$$dir"; \
	fail=0; for m in $(MODULES); do \
		f="$$dir/$$(echo $$m | tr / _)"; echo "go test $$m"; cat "$$f.log"; \
		if [ -e "$$f.failed" ]; then fail=1; fi; \
	done; rm -rf "$$dir"; exit $$fail

# The other servers: RATEKIT_REDIS_SERVERS holds their command prefixes
# separated by ';' (.ci/servers.sh installs them and prints it; .ci/run
# sets it), each given to the tests as RATEKIT_REDIS_SERVER (see
# testkit/redistest). On each, SERVER_MODULES' tests run (every Redis
# store, each a module under store/, and testkit/redistest), the
# stores' conformance suites among them, with SERVER_RAPID_CHECKS checks
# per property, without -race (the Go code is the default run's; what
# differs here is the server) and without the tests on miniredis (named
# *Miniredis*), which never reach the server. Unset, it says loudly that
# the stores were tested on the default server only, and fails under
# CI=true. SERVER_JOBS runs are at once.
SERVER_MODULES := $(filter store/%,$(MODULES)) testkit/redistest
SERVER_RAPID_CHECKS ?= 25
SERVER_JOBS ?= 2
test-servers:
	@if [ -z "$$RATEKIT_REDIS_SERVERS" ]; then \
		if [ "$$CI" = true ]; then echo "test-servers: FAIL: RATEKIT_REDIS_SERVERS is empty under CI=true (.ci/run sets it from .ci/servers.sh)"; exit 1; fi; \
		echo "test-servers: ******** RATEKIT_REDIS_SERVERS is empty: the Redis stores were tested on the default redis-server only. .ci/servers.sh DIR installs Redis 6.0, Valkey 8 and Redis 8 and prints the list. ********"; \
		exit 0; \
	fi; \
	dir=$$(mktemp -d); n=0; list="$$RATEKIT_REDIS_SERVERS;"; \
	while [ -n "$$list" ]; do \
		s=$$(echo $${list%%;*}); list=$${list#*;}; [ -n "$$s" ] || continue; \
		n=$$((n+1)); echo "$$s" >"$$dir/$$n.server"; \
		if ! v=$$($$s --version 2>&1); then echo "test-servers: FAIL: $$s --version: $$v"; rm -rf "$$dir"; exit 1; fi; \
		echo "$$v" | sed -n '1s/^\([A-Za-z]*\) server v=\([0-9.]*\).*/\1 \2/p' >"$$dir/$$n.name"; \
		for m in $(SERVER_MODULES); do echo "$$n $$m"; done >>"$$dir/jobs"; \
	done; \
	xargs -P $(SERVER_JOBS) -L 1 sh -c \
		'f="$$1/$$2.$$(echo $$3 | tr / _)"; cd $$3 && RATEKIT_REDIS_SERVER="$$(cat $$1/$$2.server)" RAPID_CHECKS=$(SERVER_RAPID_CHECKS) \
			$(GO) test -count=1 -timeout 20m -skip Miniredis ./... >"$$f.log" 2>&1 || touch "$$f.failed"' _ "$$dir" <"$$dir/jobs"; \
	fail=0; while read -r i m; do \
		f="$$dir/$$i.$$(echo $$m | tr / _)"; echo "go test $$m on $$(cat $$dir/$$i.name) ($$(cat $$dir/$$i.server))"; cat "$$f.log"; \
		if [ -e "$$f.failed" ]; then fail=1; fi; \
	done <"$$dir/jobs"; rm -rf "$$dir"; exit $$fail

vet:
	@fail=0; for m in $(MODULES); do \
		echo "go vet $$m"; \
		(cd $$m && $(GO) vet ./...) || fail=1; \
	done; exit $$fail

oldest-go:
	@GOTOOLCHAIN=go$(GO_MIN) $(GO) version
	@fail=0; for m in $(LIBRARY_MODULES); do \
		echo "go$(GO_MIN) vet $$m"; \
		(cd $$m && GOTOOLCHAIN=go$(GO_MIN) $(GO) vet ./...) || fail=1; \
	done; exit $$fail
	GOTOOLCHAIN=go$(GO_MIN) $(GO) test -count=1 -timeout 30m ./...

fmt-check:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Long runs: property checks on every store, seed parity, a million keys in
# the memory store.
soak:
	@fail=0; for m in $(MODULES); do \
		echo "go test $$m (soak)"; \
		(cd $$m && RAPID_CHECKS=3000 RAPID_STEPS=200 $(GO) test -race -count=1 -timeout 90m -run 'Conformance|Seed|Cluster' ./...) || fail=1; \
	done; exit $$fail
	RATEKIT_MEMORY_KEYS=1000000 $(GO) test -count=1 -run ManyKeys -bench ManyKeys -benchtime 300000x ./store/memory/

# Each fuzz target for FUZZTIME; make test replays the committed corpus.
FUZZTIME ?= 30s
fuzz:
	for f in FuzzConfig FuzzKeyAndCost FuzzClientIP FuzzConcurrencyConfig FuzzConcurrencyLease; do \
		(cd testkit/faulttest && $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) .) || exit 1; \
	done

# The benchmark harness (its own module, bench/peers): every algorithm on
# every store and the peer libraries, interleaved rounds, redis-benchmark
# ceilings; writes bench/RESULTS.md and bench/throughput.png. BENCHFLAGS
# selects subsets, e.g. BENCHFLAGS="-stores rueidis -algorithms gcra".
BENCHFLAGS ?=
bench:
	cd bench/peers && $(GO) run . -out .. $(BENCHFLAGS)

# The instructions redis-server runs per call of each script, as EVALSHA
# and as FCALL, counted under callgrind (needs valgrind): what
# docs/design.md's "What a script costs" quotes. Printed, not written.
bench-instructions:
	cd bench/peers && $(GO) run . -instructions $(BENCHFLAGS)

# ratekit-server beside envoyproxy/ratelimit (built from its Go module) on
# one redis-server: decisions/s and latency per request mix, and exactness
# across three processes of each (cmd/ratekit-server/bench.sh). Prints.
bench-rls:
	cmd/ratekit-server/bench.sh

# make image: ratekit-server's container image (cmd/ratekit-server/Containerfile),
# tagged IMAGE, built by CONTAINER (docker, or podman with its flags). The
# test that runs it against a real redis-server:
#   RATEKIT_IMAGE=ratekit-server:dev RATEKIT_CONTAINER=docker go test -run TestImage ./cmd/ratekit-server
IMAGE ?= ratekit-server:dev
CONTAINER ?= docker
image:
	rm -rf cmd/ratekit-server/image && mkdir cmd/ratekit-server/image
	cd cmd/ratekit-server && CGO_ENABLED=0 $(GO) build -trimpath -tags timetzdata -o image/ratekit-server .
	cp /etc/ssl/certs/ca-certificates.crt cmd/ratekit-server/image/
	$(CONTAINER) build -t $(IMAGE) -f cmd/ratekit-server/Containerfile cmd/ratekit-server/image

# The per-store go test benchmarks (each starts its own redis-server;
# each Redis store is a module of its own), and go-redis' AutoPipeliner
# (in faulttest, whose go-redis is new enough to have it).
gobench:
	for d in store/*/; do (cd $$d && $(GO) test -run '^$$' -bench . -benchmem .) || exit 1; done
	cd testkit/faulttest && $(GO) test -run '^$$' -bench 'AutoPipeline|RulesDecide' -benchmem .
	cd rules && $(GO) test -run '^$$' -bench . -benchmem .

# make release VERSION=vX.Y.Z: every go.mod's requirement on a ratekit
# module set to VERSION (the replace directives stay, for work in the
# repository), then the tags to push: VERSION for the root, <dir>/VERSION
# for each other library module, which is how Go names a version of a
# module in a subdirectory. A semantic version at major 0 or 1 only: v2
# needs a /v2 module path. docs/design.md ("Releasing") says what follows.
SEMVER_ID := (0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)
SEMVER := ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-$(SEMVER_ID)(\.$(SEMVER_ID))*)?$$
# The ratekit modules a go.mod requires, one a line.
RATEKIT_REQUIRES := /^require[ \t]*\(/ { b = 1; next } b && /^\)/ { b = 0; next } \
	{ p = b ? $$1 : ($$1 == "require" ? $$2 : "") } p ~ /^github\.com\/ratekit\/ratekit(\/|$$)/ { print p }

release:
	@v='$(VERSION)'; \
	if [ -z "$$v" ]; then echo "make release: say which version, e.g. make release VERSION=v0.2.0" >&2; exit 2; fi; \
	if ! printf '%s\n' "$$v" | grep -Eq '$(SEMVER)'; then \
		echo "make release: VERSION=$$v is not a semantic version vMAJOR.MINOR.PATCH[-PRERELEASE] (no +build suffix), e.g. v0.2.0 or v0.2.0-rc.1" >&2; exit 2; fi; \
	case "$$v" in v0.*|v1.*) ;; *) \
		echo "make release: VERSION=$$v is major version $${v%%.*}: from v2 on, Go requires every module path to end in /$${v%%.*} (github.com/ratekit/ratekit/$${v%%.*}, in every go.mod and import); ratekit's modules are at v0 and v1" >&2; exit 2;; esac; \
	if git rev-parse -q --verify "refs/tags/$$v" >/dev/null 2>&1; then \
		echo "make release: tag $$v exists; a published version never changes, choose a new one" >&2; exit 2; fi; \
	for m in $(MODULES); do \
		for p in $$(awk '$(RATEKIT_REQUIRES)' $$m/go.mod); do \
			(cd $$m && $(GO) mod edit -require=$$p@$$v) || exit 1; \
		done; \
	done; \
	tags=$$(for m in $(LIBRARY_MODULES); do if [ $$m = . ]; then echo $$v; else echo $$m/$$v; fi; done); \
	echo "Every go.mod now requires the ratekit modules at $$v. Commit, tag that commit, push:"; \
	echo "  git commit -am 'ratekit $$v'"; \
	for t in $$tags; do echo "  git tag $$t"; done; \
	echo "  git push origin" $$tags
