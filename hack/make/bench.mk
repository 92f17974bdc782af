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

# The memory goal of retention: the operator as a process of its own with 10,000 finished
# calls of 16 KiB results (1,000 end to end, 9,000 written as copies; docs/performance.md).
BENCH_RETENTION := go run ./test/bench/controller -n 1000 -keep -result-bytes 16384 -operator-process -prefill 9000 -timeout 80m $(BENCH_FLAGS)

.PHONY: bench-retention
bench-retention: ## Operator memory with 10,000 finished calls (16 KiB results), the operator measured alone.
	@echo '$(BENCH_RETENTION)' >&2
	@$(BENCH_RETENTION)
