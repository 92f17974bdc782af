# toolgate — build, generate, test.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# Pinned tool versions, installed with `go install` into bin/.
CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
GINKGO_VERSION ?= v2.34.0
K8S_VERSION ?= v1.37.2
ETCD_VERSION ?= v3.7.3

ROOT := $(abspath .)
BIN := $(ROOT)/bin
K8S_BIN := $(BIN)/k8s
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
GINKGO := $(BIN)/ginkgo
export KUBEBUILDER_ASSETS := $(K8S_BIN)
export K8S_VERSION ETCD_VERSION

.PHONY: all
all: build

##@ Tools

$(BIN):
	mkdir -p $(BIN)

$(CONTROLLER_GEN): | $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

$(GOLANGCI_LINT): | $(BIN)
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(GINKGO): | $(BIN)
	GOBIN=$(BIN) go install github.com/onsi/ginkgo/v2/ginkgo@$(GINKGO_VERSION)

.PHONY: tools
tools: $(CONTROLLER_GEN) $(GOLANGCI_LINT) $(GINKGO)

.PHONY: envtest-binaries
envtest-binaries: ## Build etcd, kube-apiserver, kubectl from Go modules into bin/k8s (cached).
	hack/k8s-binaries.sh etcd kube-apiserver kubectl

##@ Generate

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC into config/.
	$(CONTROLLER_GEN) crd paths="./api/..." output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=toolgate-manager paths="./controllers/..." output:rbac:artifacts:config=config/rbac

.PHONY: fmt
fmt:
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet:
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint v2 (pinned).
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: generate manifests ## Regenerate and fail on any diff, plus gofmt/vet/lint, the chart's copies and the docs' page budgets.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	git diff --exit-code -- api config charts
	@test -z "$$(git status --porcelain -- api config)" || { git status --porcelain -- api config; echo "untracked generated files"; exit 1; }
	$(MAKE) vet lint chart-check-sync
	hack/check-dockerfile.sh
	hack/check-docs.sh

##@ Build

.PHONY: build
build: ## Build the operator and the runner into bin/ (example tools: make images).
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/ ./cmd/manager ./cmd/runner

##@ Test

.PHONY: test
test: ## Everything CI runs, the real-cluster e2e suite included: two lanes at once (hack/test.sh), one timing line per stage.
	@MAKE="$(MAKE)" $(ROOT)/hack/test.sh

.PHONY: test-unit
# The race detector is on for unit and integration tests (CGO: gcc is on every machine).
RACE ?= -race

test-unit: ts-client ## Unit tests (no cluster), with the race detector; then clients/typescript's (node --test).
	go test $(RACE) $$(go list ./... | grep -v /test/)
	npm test --prefix clients/typescript --silent

.PHONY: test-integration
test-integration: envtest-binaries chromium ts-sdk $(GINKGO) ## envtest + ginkgo against the built kube-apiserver.
	TOOLGATE_TS_SDK=$(ROOT)/test/ts $(GINKGO) -r $(RACE) --fail-on-pending --fail-on-empty --require-suite --timeout=30m test/integration

# The official MCP TypeScript SDK for the gateway suite's client trials, and the official MCP
# conformance suite its conformance spec runs (test/ts: package.json and its lockfile; npm ci
# installs exactly the locked versions from the npm registry, when node_modules lacks one or
# is older than the lockfile).
.PHONY: ts-sdk
ts-sdk:
	@[ -d test/ts/node_modules/@modelcontextprotocol/sdk ] && [ -d test/ts/node_modules/@modelcontextprotocol/conformance ] && \
	  [ test/ts/node_modules/.package-lock.json -nt test/ts/package-lock.json ] || \
	  { echo "npm ci in test/ts (the MCP TypeScript SDK and conformance suite for the gateway suite)"; npm ci --prefix test/ts --no-audit --no-fund --loglevel=error; }

# clients/typescript, toolgate as LangChain deepagents' sandbox backend (its unit tests in
# test-unit, its agent loop in the e2e spec deepagents_test.go): npm ci from its lockfile when
# node_modules is older than it, then tsc to dist/ when a source is newer than the build.
TS_CLIENT := clients/typescript
.PHONY: ts-client
ts-client:
	@[ -d $(TS_CLIENT)/node_modules/deepagents ] && [ $(TS_CLIENT)/node_modules/.package-lock.json -nt $(TS_CLIENT)/package-lock.json ] || \
	  { echo "npm ci in $(TS_CLIENT) (deepagents, LangChain, the MCP TypeScript SDK)"; npm ci --prefix $(TS_CLIENT) --no-audit --no-fund --loglevel=error; }
	@[ -f $(TS_CLIENT)/dist/index.js ] && [ -z "$$(find $(TS_CLIENT)/src $(TS_CLIENT)/tsconfig.json $(TS_CLIENT)/node_modules/.package-lock.json -newer $(TS_CLIENT)/dist/index.js)" ] || \
	  { echo "tsc in $(TS_CLIENT)"; npm run --prefix $(TS_CLIENT) --silent build; }

# The approval console's browser specs (integration and e2e) drive Debian's Chromium; its
# recommended packages bring the fonts the screenshots need. CHROMIUM=path skips this.
.PHONY: chromium
chromium:
	@[ -n "$$CHROMIUM" ] || command -v chromium >/dev/null || { \
	  echo "installing Debian's chromium (apt)"; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

.PHONY: bench
bench: ## Pipeline benchmarks.
	go test ./pipeline/... -run '^$$' -bench . -benchmem

# Optional pieces (local cluster, e2e) add their targets here.
-include hack/make/*.mk
