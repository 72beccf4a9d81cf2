# Nexo. `make run` starts the embedded development server; `make test` runs
# every test against real MariaDB and Redis when NEXO_TEST_MYSQL_DSN and
# NEXO_TEST_REDIS_ADDR are set (see README.md; .ci/run sets them up).

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# The race detector needs cgo and a C compiler; without one (a machine with
# only Go) tests run without it, and say so.
RACE ?= $(shell command -v $${CC:-gcc} >/dev/null 2>&1 && echo -race)

.PHONY: run build test lint importcheck clean

run:
	$(GO) run ./cmd/nexo serve

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/nexo ./cmd/nexo

test: importcheck
	@[ -n "$(RACE)" ] || echo "make test: no C compiler found, running without -race" >&2
	$(GO) test $(RACE) -count=1 ./...
	$(GO) test -run '^$$' -fuzz=FuzzDecodeAndDispatch -fuzztime=10s ./gateway/ws

lint: importcheck
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l: not formatted:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

importcheck:
	@.ci/importcheck.sh

clean:
	rm -rf bin/

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
