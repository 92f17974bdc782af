# Operator <-> Pod transport benchmark for session sandboxes (issue 32 item 3): a new attach,
# a new exec, a bare exec, and direct TCP/mutual TLS to the Pod, per call, interleaved, under
# runc and gVisor, on the local cluster (test/bench/transport). Included by the main Makefile
# (-include hack/make/*.mk). Runs in its own namespace (transport-bench), deleted at the end;
# builds the responder image and imports it (hack/cluster.sh load). Never runs make up: the
# cluster must be up. See docs/reports/2026-12-06-session-transport.md.

BENCH_TRANSPORT_N ?= 100
BENCH_TRANSPORT_RUNTIMES ?= runc,gvisor
# The checkout that owns the cluster (its hack/cluster.sh and .cluster/kubeconfig).
BENCH_TRANSPORT_CLUSTER_ROOT ?= $(ROOT)
# More flags, e.g. BENCH_TRANSPORT_FLAGS="-netpol -series attach-ws,tcp-keep"; see
# go run ./test/bench/transport -help.
BENCH_TRANSPORT_FLAGS ?=

.PHONY: bench-transport
bench-transport: ## Operator<->Pod transport per call: attach, exec, bare exec, direct TCP/mTLS (runc and gVisor; cluster must be up).
	@$(BENCH_TRANSPORT_CLUSTER_ROOT)/hack/cluster.sh status >/dev/null 2>&1 || \
	  { echo "bench-transport: the cluster at $(BENCH_TRANSPORT_CLUSTER_ROOT) is not healthy (make up)"; exit 1; }
	go run ./test/bench/transport -cluster-root $(BENCH_TRANSPORT_CLUSTER_ROOT) \
	  -n $(BENCH_TRANSPORT_N) -runtimes $(BENCH_TRANSPORT_RUNTIMES) $(BENCH_TRANSPORT_FLAGS)
