# vplayer developer targets. `make test` needs a MariaDB or MySQL server binary (see
# scripts/ensure-mysqld.sh), Prometheus's promtool and server (scripts/ensure-prometheus.sh),
# pt-online-schema-change (scripts/ensure-percona-toolkit.sh) and the pinned dolt
# (scripts/ensure-dolt.sh, which builds it when missing); CI runs .ci/run, which
# sets VPLAYER_REQUIRE_MYSQL=1 so that server tests fail instead of skipping when a binary is
# missing.

GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
TEST_TIMEOUT ?= 15m

# Passed to the tests only when the caller set them (environment or command line).
ifdef VPLAYER_REQUIRE_MYSQL
export VPLAYER_REQUIRE_MYSQL
endif
ifdef VPLAYER_MYSQLD
export VPLAYER_MYSQLD
endif
ifdef VPLAYER_DOLT
export VPLAYER_DOLT
endif

.PHONY: all deps test rules vet build demo bench

all: vet build test

# deps makes sure a server binary, Prometheus and pt-online-schema-change are installed (installs
# mariadb-server, prometheus and percona-toolkit as root with apt-get), and the pinned dolt, the
# MySQL-flavour source of e2e's Dolt suite (built with go install into the user's cache directory
# when missing: about 5 minutes on 2 cores, once).
deps:
	@scripts/ensure-mysqld.sh
	@scripts/ensure-prometheus.sh
	@scripts/ensure-percona-toolkit.sh
	@scripts/ensure-dolt.sh

# rules checks the alert rules and runs their unit tests.
RULES := deploy/prometheus/vplayer-rules.yml
rules: deps
	promtool check rules $(RULES)
	promtool test rules $(RULES:.yml=.test.yml)

# scripts/test.sh runs `go test -race ./...` with e2e's Dolt suite in a second test binary beside
# it (those tests share one Dolt and mostly wait on it), and fails when either fails.
test: deps rules
	GO=$(GO) TEST_TIMEOUT=$(TEST_TIMEOUT) scripts/test.sh

# staticcheck is run at a pinned version through the module proxy (go run fetches it once).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
vet:
	@unformatted="$$(gofmt -l .)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run ./internal/tools/sizecheck
	$(GO) run ./internal/tools/archcheck

build:
	$(GO) build -o bin/vplayer ./cmd/vplayer

# demo and bench need only the MariaDB server, not test's Prometheus and dolt.
demo:
	@scripts/ensure-mysqld.sh
	$(GO) run ./cmd/vplayer demo

# bench times vplayer against native replication on local servers (about 20 minutes) and writes
# bench/results/*.json. By default it times vplayer with 1 and with 2 apply workers, as the
# figures in docs/benchmarks.md are; BENCH_FLAGS replaces that (BENCH_FLAGS=--quick runs one
# vplayer with its default on small backlogs in about a minute). cmd/vplayer-bench builds the vplayer it times
# from this tree with $(GO) (BENCH_FLAGS=--vplayer PATH times another). Its quick mode also runs
# inside `make test` (internal/bench/bench_test.go).
BENCH_FLAGS ?= --apply-workers 1,2
bench:
	@scripts/ensure-mysqld.sh
	GO=$(GO) $(GO) run ./cmd/vplayer-bench $(BENCH_FLAGS)
