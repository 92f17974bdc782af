# Real-cluster latency benchmark: toolgate's ToolCall vs a bare Job and a bare Pod of the same
# image, interleaved, on the local cluster (test/bench/e2e). Included by the main Makefile
# (-include hack/make/*.mk). Runs `make up` first when `hack/cluster.sh status` fails.
# See docs/performance-cluster.md, "Real-cluster latency".

BENCH_E2E_N ?= 30
# More flags, e.g. BENCH_E2E_FLAGS="-init=false -gap 2s"; see go run ./test/bench/e2e -help.
BENCH_E2E_FLAGS ?=

.PHONY: bench-e2e
bench-e2e: ## Real-cluster latency: ToolCall vs bare Job vs bare Pod (make up first if the cluster is not healthy).
	@if $(ROOT)/hack/cluster.sh status >/dev/null 2>&1; then \
	  echo "bench-e2e: cluster healthy; skipping make up"; \
	else \
	  echo "bench-e2e: cluster not up; running make up"; \
	  $(MAKE) up; \
	fi
	go run ./test/bench/e2e -n $(BENCH_E2E_N) $(BENCH_E2E_FLAGS)
