# API Priority and Fairness benchmark: the operator's status-write latency while agents flood
# the API server with ToolCall creates, without and with the chart's FlowSchemas and
# PriorityLevelConfigurations (test/bench/apf). Included by the main Makefile
# (-include hack/make/*.mk). Not part of make test. See docs/performance-cluster.md.

# The API server's concurrency limits for the run: kube-apiserver's defaults (400 + 200
# mutating) are sized for many-core control planes; 20 + 10 give this 2-core machine's
# envtest about as many seats as its CPU serves at once (docs/performance-cluster.md explains).
BENCH_APF_INFLIGHT ?= 20
BENCH_APF_MUTATING ?= 10
# More flags, e.g. BENCH_APF_FLAGS="-rounds 1 -duration 10s" or "-agent-kind user"; see -help.
BENCH_APF_FLAGS ?=
BENCH_APF := go run ./test/bench/apf -max-requests-inflight $(BENCH_APF_INFLIGHT) \
	-max-mutating-requests-inflight $(BENCH_APF_MUTATING) $(BENCH_APF_FLAGS)

.PHONY: bench-apf
bench-apf: helm ## Operator status-write latency under an agents' ToolCall flood, without and with the chart's APF objects (envtest).
	@echo '$(BENCH_APF)' >&2
	@$(BENCH_APF)
