# Controller benchmark: N ToolCalls end to end against envtest and the simulated Kubelet.
# Included by the main Makefile (-include hack/make/*.mk). See docs/performance.md.

BENCH_N ?= 1000
# More flags, e.g. BENCH_FLAGS=-json or BENCH_FLAGS="-rate 5 -concurrency 4"; see -help.
BENCH_FLAGS ?=
BENCH_CONTROLLER := go run ./test/bench/controller -n $(BENCH_N) $(BENCH_FLAGS)

##@ Benchmarks

.PHONY: bench-controller
bench-controller: ## ToolCall pipeline benchmark (envtest + simulated Kubelet): throughput, latencies, API writes per call, memory.
	@echo '$(BENCH_CONTROLLER)' >&2
	@$(BENCH_CONTROLLER)
