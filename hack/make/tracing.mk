# OpenTelemetry traces (docs/observability.md, "Tracing"): Jaeger built from Go modules for the
# local cluster, and the traces' own test targets. Included by the main Makefile.
#
# TRACING=1 (make up, make test-e2e) builds and starts Jaeger on the node and installs the
# operator exporting to it; the e2e trace spec then must pass (without TRACING=1 it is
# skipped on a cluster that has no Jaeger). `make test` (and so .ci/run) sets it: the cluster
# it brings up has Jaeger, and the trace spec runs.
TRACING ?=
export TRACING
test: TRACING = 1

##@ Tracing

.PHONY: jaeger
jaeger: ## Build Jaeger (hack/tools/jaeger/go.mod, v1.76.0) into bin/jaeger (cached; the first build takes minutes).
	$(ROOT)/hack/jaeger/jaeger.sh build

.PHONY: jaeger-up
jaeger-up: ## Start Jaeger on this machine (OTLP :4317/:4318, UI and query API http://127.0.0.1:16686); make up TRACING=1 does it.
	$(ROOT)/hack/jaeger/jaeger.sh start

.PHONY: jaeger-down
jaeger-down: ## Stop the Jaeger jaeger-up started (make down stops it too).
	$(ROOT)/hack/jaeger/jaeger.sh stop

.PHONY: test-tracing
test-tracing: envtest-binaries $(GINKGO) ## The tracing package's tests and its envtest suite (test/integration/tracing).
	go test ./internal/tracing/...
	$(GINKGO) --fail-on-pending --fail-on-empty --require-suite --timeout=10m test/integration/tracing

# With TRACING=1 (make test) the envtest suite's Jaeger spec must run: build bin/jaeger first.
test-integration: jaeger-if-tracing
.PHONY: jaeger-if-tracing
jaeger-if-tracing:
	@if [ "$(TRACING)" = 1 ]; then $(ROOT)/hack/jaeger/jaeger.sh build; fi
