# taskflow — run `make help` for the targets.
SHELL := /bin/bash
GO ?= go
GOTEST_FLAGS ?= -race -count=1 -timeout 15m
export TASKFLOW_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
export TASKFLOW_TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
# make fuzz: how long each fuzz target runs, and which packages
FUZZTIME ?= 10s
FUZZPKGS ?= ./...

.PHONY: bench-limits sdk-py-check test-sdk-py image compose-test helm-check test-examples chaos test-cluster mcp-client-deps help run build install test test-go check-test-servers node-service-deps sdk-ts-deps sdk-ts-build sdk-ts-types sdk-ts-check test-sdk-ts test-dsl bench fuzz lint fmt generate plans plans-check dsl-deps ui ui-types ui-check test-ui ui-screenshots ui-bench web-deps conformance clean

help: ## Show this help
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

run: ## Build bin/taskflow and bin/rankd, then run taskflow dev with the example services and the plans' demo data (embedded Redis on 127.0.0.1:6380 when REDIS_URL is unset); Ctrl-C stops it
	@$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/taskflow ./cmd/rankd
	@# Ctrl-C reaches taskflow, which stops gracefully and exits 0; the
	@# recipe's shell ignores the interrupt itself, so make ends quietly
	@trap 'exit 0' INT; bin/taskflow dev --services all --demo-data; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 130 ] || exit $$rc

# The commit the binaries report (taskflow version, rankd --version) when the
# build has no VCS information of its own (GOFLAGS=-buildvcs=false, go run).
LDFLAGS ?= -X github.com/taskflow/taskflow/internal/platform/version.commit=$(shell git rev-parse HEAD 2>/dev/null)

build: ## Build the binaries into bin/
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/...

install: ## Install taskflow and rankd into $(go env GOPATH)/bin (put it on your PATH)
	$(GO) install -ldflags '$(LDFLAGS)' ./cmd/...

test: test-go test-cluster test-dsl ui-check test-ui test-sdk-ts test-sdk-py helm-check ## Run every test (Go with -race, again on a Redis Cluster, the DSL's, the dashboard's build check and browser tests, the TypeScript and Python SDKs', the Helm chart's)

test-go: check-test-servers node-service-deps mcp-client-deps ## Run the Go tests with -race against the real Redis/PostgreSQL, and the Go example module's
	$(GO) test $(GOTEST_FLAGS) ./...
	$(MAKE) test-examples

# The Python SDK runs on the system's Python and Debian's python3-httpx,
# python3-redis, python3-pytest and python3-pytest-asyncio (.ci/run installs
# them); SDK_PY_TESTS is relative to sdk/python.
PYTHON ?= /usr/bin/python3
SDK_PY_TESTS ?= tests

sdk-py-check: ## Byte-compile the Python SDK and its examples and check that it imports (no server needed)
	$(PYTHON) -m compileall -q sdk/python/src sdk/python/examples sdk/python/tests
	cd sdk/python && PYTHONPATH=src $(PYTHON) -c 'import taskflow_sdk, examples.analysis, examples.document; print("taskflow_sdk", taskflow_sdk.__version__)'

test-sdk-py: check-test-servers sdk-py-check ## Run the Python SDK's tests (pytest) against a taskflow dev they build and start on the test Redis
	cd sdk/python && $(PYTHON) -m pytest -q -p no:cacheprovider $(SDK_PY_TESTS)

helm-check: ## Lint the Helm chart (deploy/helm/taskflow), render it for several value sets and decode every manifest strictly into the Kubernetes types (its own Go module)
	cd deploy/helm && $(GO) test -count=1 ./...

test-examples: ## Build, vet and test the example module that uses taskflow as a library (examples/go-worker, its own go.mod)
	cd examples/go-worker && $(GO) vet ./... && $(GO) test $(GOTEST_FLAGS) ./...

# The packages of every Lua script and every stream consumer, and the public
# Go API (its Client and Worker on a cluster URL); cmd/ and the examples
# start processes and Node clients that read a single server.
CLUSTER_PKGS ?= . ./internal/... ./extsvc/...
# ... except the deployment of several partitions, whose processes are
# pointed at the cluster: its partitions sit on the three masters.
CLUSTER_CMD_TESTS ?= TestPartitionedDeploymentEndToEnd

test-cluster: ## Run the Go tests of every script and stream consumer against a local 3-master Redis Cluster (tools/redis-cluster; REDIS_CLUSTER_PORTS, default 7101-7103)
	@dir=$$(mktemp -d); url=$$(tools/redis-cluster start $$dir) || { rm -rf $$dir; exit 1; }; \
	echo "test-cluster: $$url"; \
	TASKFLOW_TEST_REDIS_URL="$$url" $(GO) test -count=1 $(CLUSTER_PKGS) && \
	TASKFLOW_TEST_REDIS_URL="$$url" $(GO) test -count=1 -run '$(CLUSTER_CMD_TESTS)' ./cmd/taskflow/; rc=$$?; \
	tools/redis-cluster stop $$dir; rm -rf $$dir; exit $$rc

# The fault tests: crashes, stalls, outages and failovers, with what each
# measured (make test runs them too; this shows their figures).
CHAOS_TESTS ?= TestChaos|TestClusterFailover|TestPartitionedClusterMasterCrash|TestRedisStallLongerThanLease|TestWorkerPartitionedFromRedis|TestCompletionSurvivesRedisOutage|TestSIGKILLedWorkerTaskRecoveredOnce|TestRedisStallIsAFast503|TestRedisDown|TestEnqueueResentAfterStall|KilledMid

chaos: check-test-servers ## Run the fault tests (worker and process kills, Redis stalls and outages, cluster failovers) and print what each measured
	@$(GO) test -count=1 -run '$(CHAOS_TESTS)' -v ./internal/... ./cmd/taskflow | grep -E -- '^--- (PASS|FAIL)|^(ok|FAIL)\s|_test\.go:[0-9]+: [a-z]' | grep -v 'no tests to run'

check-test-servers: # Say at once when the tests' Redis or PostgreSQL does not answer (naming the variable to set)
	@tools/check-test-servers

node-service-deps: sdk-ts-build # Install examples/node-service/node_modules (its Go test runs the Node service, on the TypeScript SDK) when missing
	@if [ ! -d examples/node-service/node_modules ]; then cd examples/node-service && npm ci --no-audit --no-fund; fi

sdk-ts-deps: # Install sdk/typescript/node_modules from the lock file when missing
	@if [ ! -d sdk/typescript/node_modules ]; then cd sdk/typescript && npm ci --no-audit --no-fund; fi

sdk-ts-build: sdk-ts-deps # Build the TypeScript SDK into sdk/typescript/dist (the Node example imports it from there)
	cd sdk/typescript && npm run --silent build

sdk-ts-types: sdk-ts-deps ## Regenerate the TypeScript SDK's API types (sdk/typescript/src/openapi.ts) from the API's /openapi.json
	cd sdk/typescript && npm run --silent types

sdk-ts-check: sdk-ts-deps # Fail when the TypeScript SDK's API types differ from fresh ones, or its version from the API's
	cd sdk/typescript && npm run --silent types
	git diff --exit-code --stat -- sdk/typescript/src/openapi.ts
	node sdk/typescript/scripts/version-check.mjs

test-sdk-ts: sdk-ts-check ## Run the TypeScript SDK's tests (node's test runner) against a real taskflow dev it starts, incl. npm pack and an install of the tarball
	cd sdk/typescript && npx tsc -p tsconfig.json --noEmit && npm test

mcp-client-deps: # Install examples/mcp-node-client/node_modules (a Go test runs the TypeScript SDK's MCP client) when missing
	@if [ ! -d examples/mcp-node-client/node_modules ]; then cd examples/mcp-node-client && npm ci --no-audit --no-fund; fi

test-dsl: dsl-deps ## Run the DSL's tests (vitest, incl. end to end on rankd), then plans-check
	cd dsl && npm test
	$(MAKE) plans-check

dsl-deps: # Install dsl/node_modules from the lock file when missing (.ci/run does it too)
	@if [ ! -d dsl/node_modules ]; then cd dsl && npm ci --no-audit --no-fund; fi

PLAN_SOURCES := $(wildcard plans/*.plan.ts)

plans: dsl-deps ## Regenerate the DSL's registry tables and compile plans/*.plan.ts to plans/*.plan.json
	cd dsl && npm run --silent generate && npm run --silent build && node bin/dslc build $(PLAN_SOURCES:%=../%) --out ../plans

plans-check: dsl-deps ## Fail when the DSL's registry tables or plans/*.plan.json differ from their sources, or a plan does not type-check
	cd dsl && npm run --silent generate:check
	cd dsl && npx tsc -p ../plans/tsconfig.json --noEmit
	cd dsl && npm run --silent build && node bin/dslc build $(PLAN_SOURCES:%=../%) --out ../plans --check

web-deps: # Install web/node_modules from the lock file when missing
	@if [ ! -d web/node_modules ]; then cd web && npm ci --no-audit --no-fund; fi

bench-limits: ## The fleet-wide limits' figures (docs/benchmarks.md): a rate limit observed over 60 s and a concurrency limit across 4 worker processes
	TASKFLOW_RATE_WINDOW=60s go test -count=1 -run 'TestRateLimitHoldsAcrossFourProcesses|TestConcurrencyLimitHoldsAcrossFourProcesses|TestPausedTypeStartsNothingAfterThePause' -v -timeout 5m ./internal/engine/worker/ | grep -E 'rate limit|concurrency limit|^(--- |ok|FAIL)'

ui: web-deps ## Regenerate the API types and rebuild the web dashboard into internal/frontend/webui/dist (embedded in the binary)
	cd web && npm run --silent types && npm run --silent build

ui-types: web-deps ## Regenerate web/src/api/schema.d.ts from the API's /openapi.json
	cd web && npm run --silent types

ui-check: web-deps ## Fail when the committed dashboard build or its API types differ from fresh ones
	cd web && npm run --silent types
	git diff --exit-code --stat -- web/src/api
	cd web && npm run --silent build
	git diff --exit-code --stat -- internal/frontend/webui/dist
	@test -z "$$(git status --porcelain -- internal/frontend/webui/dist)" || (git status --porcelain -- internal/frontend/webui/dist && false)

test-ui: web-deps ## Run the dashboard's unit tests (vitest), then its end-to-end tests in Chromium against a real taskflow dev
	cd web && npx tsc --noEmit && npm test && npm run test:e2e

ui-screenshots: web-deps ## Run the dashboard's end-to-end tests and write the screenshots of each page into docs/img/
	cd web && UI_SCREENSHOTS=1 npm run test:e2e

ui-bench: web-deps ## Measure the dashboard against running servers (not part of make test): TASKS_URL = an API over a filled namespace, OVERVIEW_URL = a taskflow dev (web/test/perf, docs/benchmarks.md)
	@test -n "$(TASKS_URL)$(OVERVIEW_URL)" || { echo "ui-bench: set TASKS_URL (an API serving a namespace filled by taskflow-bench fill) and/or OVERVIEW_URL (a taskflow dev it may load with tasks); web/test/perf/run.sh does the whole sequence"; exit 2; }
	@if [ -n "$(TASKS_URL)" ]; then cd web && TASKS_URL='$(TASKS_URL)' node test/perf/tasks-page.mjs; fi
	@if [ -n "$(OVERVIEW_URL)" ]; then cd web && OVERVIEW_URL='$(OVERVIEW_URL)' node test/perf/overview-load.mjs; fi

# make image: the compile stage needs the Go image GO_IMAGE; where no
# registry is reachable, BINARY=prebuilt packs a static binary built here.
BINARY ?= compile
IMAGE ?= taskflow:latest
DOCKER ?= $(shell test -x /usr/bin/docker && echo /usr/bin/docker || echo docker)

image: ## Build the container image (Dockerfile; IMAGE=taskflow:latest; BINARY=prebuilt packs a static binary built here instead of compiling in the Go image)
	@if [ "$(BINARY)" = prebuilt ]; then \
		rm -rf bin/linux && mkdir -p bin/linux/data/output bin/linux/data/artifacts && \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/linux/ ./cmd/taskflow ./cmd/rankd && \
		cp /etc/ssl/certs/ca-certificates.crt bin/linux/; fi
	DOCKER_BUILDKIT=1 $(DOCKER) build --network host --build-arg BINARY=$(BINARY) --build-arg COMMIT=$(shell git rev-parse HEAD 2>/dev/null) -t $(IMAGE) .

compose-test: ## Bring compose.yaml up for real (image, Redis, PostgreSQL, 2 APIs, 2 workers, orchestrator, services), SIGKILL a worker mid-run, check every task completes once, bring it down (needs dockerd and docker-compose; not part of make test)
	@$(DOCKER) info >/dev/null 2>&1 || { echo "compose-test: no Docker daemon: start one (as root: dockerd --storage-driver=vfs --iptables=false --bridge=none &)"; exit 2; }
	$(GO) test -tags compose -count=1 -v -timeout 30m ./deploy/compose/

bench: ## Run the Go benchmarks (results go in docs/benchmarks.md by hand)
	$(GO) test -run '^$$' -bench . -benchmem ./...

fuzz: ## Run every Fuzz* target for FUZZTIME each (default 10s; FUZZPKGS=./internal/frontend/httpapi/ for some packages only)
	@set -e; for pkg in $$($(GO) list $(FUZZPKGS)); do \
		for fz in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$fz ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fz\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

lint: ## gofmt + go vet (+ golangci-lint when installed)
	@test -z "$$(gofmt -l .)" || (gofmt -l . && false)
	$(GO) vet ./...
	@if command -v golangci-lint >/dev/null; then golangci-lint run; fi

fmt: ## Format the Go code
	gofmt -w .

generate: ## Regenerate generated files
	$(GO) generate ./...

conformance: ## Run our plan engine against the reference rankd's plans and registries (../shared/reference/rankd) when present
	@ref="$${RANKD_REFERENCE_DIR:-../shared/reference/rankd}"; \
	if [ -d "$$ref/plans" ]; then \
		RANKD_REFERENCE_DIR="$$(cd "$$ref" && pwd)" $(GO) test -race -count=1 -tags conformance -run '^TestConformance$$' -v ./internal/plan/ ; \
	else \
		echo "conformance: no reference engine files at $$ref (they exist beside the checkout on the build machines only) - nothing to compare, skipping"; \
	fi

clean: ## Remove build output
	rm -rf bin
