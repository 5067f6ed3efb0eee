# ratekit: make test is what CI runs (.ci/run). See README.md.
GO ?= go
# Property-based runs (pgregory.net/rapid): checks per property and steps
# per check. make test keeps them lean; make soak raises them.
RAPID_CHECKS ?= 100
RAPID_STEPS ?= 30
export RAPID_CHECKS RAPID_STEPS

.PHONY: test fmt-check vet soak bench

test: fmt-check vet
	$(GO) test -race -count=1 -timeout 30m ./...

fmt-check:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Long property runs: conformance on every store and the seed parity tests.
soak:
	RAPID_CHECKS=3000 RAPID_STEPS=200 $(GO) test -race -count=1 -timeout 90m -run 'Conformance|Seed' ./...

# Per-store benchmarks (each starts its own redis-server).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./store/...
