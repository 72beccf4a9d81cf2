# Nexo. `make run` starts the embedded development server; `make test` runs
# every test against real MariaDB and Redis when NEXO_TEST_MYSQL_DSN and
# NEXO_TEST_REDIS_ADDR are set (see README.md; .ci/run sets them up).

# pipefail: `go test -json | testsummary` must fail when go test does.
SHELL   := /bin/bash
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# The race detector needs cgo and a C compiler; without one (a machine with
# only Go) tests run without it, and say so.
RACE ?= $(shell command -v $${CC:-gcc} >/dev/null 2>&1 && echo -race)

.PHONY: run build test test-sdk lint importcheck clean docker fuzz

run:
	$(GO) run ./cmd/nexo serve

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/nexo ./cmd/nexo

test: importcheck
	@[ -n "$(RACE)" ] || echo "make test: no C compiler found, running without -race" >&2
	@# Fuzz budgets are execution counts (about 10 s each here), not
	@# durations: Go 1.26's fuzz coordinator can fail a run with a bare
	@# "context deadline exceeded" when a duration ends mid-execution
	@# (golang/go#75804, fixed in Go 1.27; seen in CI on FuzzMessageContent).
	$(GO) test -run '^$$' -fuzz=FuzzDecodeAndDispatch -fuzztime=10000x ./gateway/ws
	$(GO) test -run '^$$' -fuzz=FuzzDecodeJSON -fuzztime=8000x ./gateway/api
	@# The whole server in-process: SQLite, and MariaDB + Redis when their
	@# variables are set. The first run builds cmd/app instrumented (minutes
	@# on 2 cores, then cached; both targets share the build).
	$(GO) test -run '^$$' -fuzz=FuzzQueryString -fuzztime=2000x ./cmd/app
	$(GO) test -run '^$$' -fuzz=FuzzMessageContent -fuzztime=500x ./cmd/app
	$(GO) test ./.ci/testsummary ./.ci/importcheck
	@# -json keeps go test's output as it would be without it, and ends with one
	@# line counting the skipped integration tests (.ci/testsummary).
	set -o pipefail; $(GO) test $(RACE) -count=1 -timeout 15m -json ./... | $(GO) run ./.ci/testsummary

# test-sdk runs the JavaScript SDK's tests (Node >= 20 and npm): unit tests,
# then integration and fault tests against ./cmd/nexo in the embedded mode,
# which they build and start themselves (docs/sdk.md).
test-sdk:
	cd sdk/js && npm ci --no-audit --no-fund && npm test

lint: importcheck
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l: not formatted:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./... ./.ci/testsummary ./.ci/importcheck
	@$(GO) mod tidy -diff >/dev/null 2>&1 || { echo "go.mod/go.sum are not tidy: run go mod tidy (go mod tidy -diff shows what changes)"; $(GO) mod tidy -diff; exit 1; }

importcheck:
	@.ci/importcheck.sh

clean:
	rm -rf bin/

# docker builds the image with the version and commit baked in (Dockerfile
# ARG VERSION/COMMIT; compose passes BUILD_VERSION/BUILD_COMMIT the same way).
docker:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t nexo:$(VERSION) .

# bench runs nexo-bench's standard suite (docs/bench/README.md) against Nexo
# started in-process on the local MariaDB (database nexo_bench, dropped and
# recreated) and Redis (a fresh key prefix, deleted afterwards): about ten
# minutes on 2 cores. Results go to docs/bench/ (JSON, HTML, results.md) and
# README.md's performance section is regenerated from them. Pass e.g.
# BENCH_FLAGS='--quick' or BENCH_FLAGS='--mysql-dsn ... --redis-addr ...'.
BENCH_FLAGS ?=
.PHONY: bench
bench:
	$(GO) run ./cmd/nexo-bench suite --out-dir docs/bench --readme README.md $(BENCH_FLAGS)

# fuzz runs every fuzz target longer than make test does (FUZZTIME each,
# default 5m); new interesting inputs stay in Go's cache, copy the ones worth
# keeping into the package's testdata/fuzz/<Target>/ (committed corpora).
FUZZTIME ?= 5m
fuzz:
	$(GO) test -run '^$$' -fuzz=FuzzDecodeAndDispatch -fuzztime=$(FUZZTIME) ./gateway/ws
	$(GO) test -run '^$$' -fuzz=FuzzDecodeJSON -fuzztime=$(FUZZTIME) ./gateway/api
	$(GO) test -run '^$$' -fuzz=FuzzQueryString -fuzztime=$(FUZZTIME) ./cmd/app
	$(GO) test -run '^$$' -fuzz=FuzzMessageContent -fuzztime=$(FUZZTIME) ./cmd/app
