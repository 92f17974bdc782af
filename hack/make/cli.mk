# The toolgate CLI, also installed as the kubectl plugin kubectl-toolgate (same binary,
# hard-linked: it behaves the same under either name). Included by the main Makefile.

CLI_VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

##@ CLI

.PHONY: cli
cli: | $(BIN) ## Build the CLI into bin/toolgate and bin/kubectl-toolgate (put bin/ on PATH for `kubectl toolgate`).
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w -X github.com/toolgate/toolgate/internal/cli.Version=$(CLI_VERSION)' \
		-o $(BIN)/toolgate ./cmd/toolgate
	ln -f $(BIN)/toolgate $(BIN)/kubectl-toolgate

.PHONY: test-cli
test-cli: envtest-binaries $(GINKGO) ## The CLI's unit tests and its envtest suite (test/integration/cli).
	go test ./internal/cli/...
	$(GINKGO) --fail-on-pending --fail-on-empty --require-suite --timeout=10m test/integration/cli
