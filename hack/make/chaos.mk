# Chaos: N ToolCalls through the real reconcilers while the operator process is SIGKILLed and
# started again at random intervals (envtest + the simulated kubelet, test/chaos), checked by
# test/chaos/check. Included by the main Makefile; test-chaos-short is part of `make test`.
# See docs/reliability.md.

CHAOS_N ?= 1000
# The run with API server restarts: each restart keeps the API server away ~22 s, so creating a
# call takes ~4 s there (docs/reliability.md) and N=1000 would take over an hour.
CHAOS_RESTART_N ?= 200
# More flags for both runs of `make chaos`, e.g. CHAOS_FLAGS="-seed 42 -json"; see -help.
CHAOS_FLAGS ?=
CHAOS := go run ./test/chaos

##@ Chaos

.PHONY: test-chaos-short
test-chaos-short: envtest-binaries ## The checker's unit tests, then a short chaos run (100 calls, an operator kill every 2 s); part of make test.
	go test $(RACE) ./test/chaos/...
	$(CHAOS) -n 100 -kill-min 2s -kill-max 2s $(CHAOS_FLAGS)

.PHONY: chaos
chaos: envtest-binaries ## Full chaos runs: CHAOS_N calls, kills every 1–3 s; then CHAOS_RESTART_N calls with API server restarts too.
	$(CHAOS) -n $(CHAOS_N) -kill-min 1s -kill-max 3s $(CHAOS_FLAGS)
	$(CHAOS) -n $(CHAOS_RESTART_N) -kill-min 1s -kill-max 3s -restart-apiserver -timeout 45m $(CHAOS_FLAGS)
