# Switchboard. `make run` serves on a project-local PostgreSQL cluster under
# ./.data; `make test` runs every test, each test binary on its own throwaway
# cluster (or on TEST_DATABASE_URL's server when set).

GO       ?= go
BIN      := bin/switchboard
# Go files of the project, without the cluster and build directories (the
# cluster's data directory is not readable by every user).
GOFILES   = $(shell find . \( -path ./.git -o -path ./.data -o -path ./bin -o -path ./test-artifacts \) -prune -o -name '*.go' -print)

.PHONY: all build run stop test fuzz bench fmt lint clean pg browser haproxy

all: build

# The build stamps the VCS revision, its commit time and whether the checkout had changes
# into the binary (-ldflags -X), which `go build` does by itself unless -buildvcs=false
# (some environments put it in GOFLAGS): `switchboard version` and /metrics name the code
# either way. Outside a git checkout the stamps are empty and the binary reports Go's own.
STAMP = -X main.stampRevision=$(shell git rev-parse HEAD 2>/dev/null) \
	-X main.stampTime=$(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null) \
	-X main.stampModified=$(shell if [ -n "$$(git status --porcelain 2>/dev/null)" ]; then echo true; else echo false; fi)

build:
	$(GO) build -ldflags "$(STAMP)" -o $(BIN) ./cmd/switchboard

# With --dev the binary starts the ./.data cluster itself when DATABASE_URL is
# unset (without --dev, serve refuses to start with no database URL), migrates,
# seeds the demo data into an empty database and prints credentials.
run: build $(if $(DATABASE_URL),,pg)
	./$(BIN) serve --dev --demo

# The project-local PostgreSQL that `make run` starts keeps running after serve exits (Ctrl-C),
# so that the next `make run` starts at once. `make stop` shuts it down: a fast shutdown
# (SIGINT to the postmaster: sessions end, committed data stays), waited for up to a minute.
DEV_PIDFILE := .data/pgdata/postmaster.pid
stop:
	@pid=$$(head -n 1 $(DEV_PIDFILE) 2>/dev/null); \
	if [ -z "$$pid" ] || ! kill -0 "$$pid" 2>/dev/null || ! ps -p "$$pid" -o comm= | grep -q postgres; then \
		echo "the project-local PostgreSQL (./.data) is not running"; exit 0; \
	fi; \
	kill -INT "$$pid"; \
	for i in $$(seq 600); do \
		if ! kill -0 "$$pid" 2>/dev/null; then echo "stopped the project-local PostgreSQL (./.data)"; exit 0; fi; \
		sleep 0.1; \
	done; \
	echo "PostgreSQL (pid $$pid) did not stop within a minute" >&2; exit 1

test: $(if $(TEST_DATABASE_URL),,pg) browser haproxy
	$(GO) test -race -count=1 -timeout 30m ./...

# Every fuzz target of the project runs for FUZZTIME on top of its seed corpus, which
# `make test` already runs as tests (.ci/fuzz says how a failure is judged).
FUZZTIME ?= 5s
fuzz: $(if $(TEST_DATABASE_URL),,pg)
	GO=$(GO) FUZZTIME=$(FUZZTIME) .ci/fuzz

bench: build
	./$(BIN) bench

fmt:
	gofmt -w $(GOFILES)

# staticcheck, pinned; installed with `go install` into GOBIN (or GOPATH/bin)
# when that version is not there yet.
STATICCHECK_VERSION := v0.8.2
GOBINDIR    = $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)
STATICCHECK = $(GOBINDIR)/staticcheck

lint:
	$(GO) vet ./...
	@out="$$(gofmt -l $(GOFILES))"; if [ -n "$$out" ]; then echo "gofmt needed (run make fmt):"; echo "$$out"; exit 1; fi
	@if ! [ -x "$(STATICCHECK)" ] || ! "$(STATICCHECK)" -version 2>/dev/null | grep -qF "($(STATICCHECK_VERSION:v%=%))"; then \
		echo "installing staticcheck $(STATICCHECK_VERSION)"; \
		$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); \
	fi
	$(STATICCHECK) ./...

clean:
	rm -rf bin
	$(GO) clean -testcache

# PostgreSQL server binaries (initdb, pg_ctl, postgres): present in PATH or in
# /usr/lib/postgresql/*/bin, else installed with apt-get when running as root.
pg:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "PostgreSQL server binaries not found: installing the postgresql package"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	else \
		echo "PostgreSQL server binaries (initdb, pg_ctl) not found in PATH nor in /usr/lib/postgresql/*/bin." >&2; \
		echo "Install them (Debian/Ubuntu: sudo apt-get install postgresql), or point the tests at a server" >&2; \
		echo "with TEST_DATABASE_URL=postgres://user@host:port/db (the user needs CREATEDB)." >&2; \
		exit 1; \
	fi

# Chromium for the browser tests of the hosted pages (cmd/switchboard/app/browsertest):
# Debian's package, installed with apt-get when missing and running as root. Without it
# those tests skip, except under CI=true, where they fail.
browser:
	@if [ -x /usr/bin/chromium ]; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "Chromium not found: installing the chromium package"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	else \
		echo "Chromium (/usr/bin/chromium) is not installed: the browser tests will skip." >&2; \
		echo "Install it (Debian/Ubuntu: sudo apt-get install chromium) to run them." >&2; \
	fi

# HAProxy for the test of the deployment topology (router/haproxy_test.go, docs/deploy.md):
# Debian's package, installed with apt-get when missing and running as root. Without it
# that test skips, except with SWITCHBOARD_REQUIRE_HAPROXY=1 (set by .ci/run) or CI=true.
haproxy:
	@if command -v haproxy >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "HAProxy not found: installing the haproxy package"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy; \
	else \
		echo "HAProxy is not installed: the haproxy test will skip." >&2; \
		echo "Install it (Debian/Ubuntu: sudo apt-get install haproxy) to run it." >&2; \
	fi
