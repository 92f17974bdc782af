# Chaos: N ToolCalls through the real reconcilers while the operator process is SIGKILLed and
# started again at random intervals (envtest + the simulated kubelet, test/chaos), checked by
# test/chaos/check. Included by the main Makefile; test-chaos-short is part of `make test`.
# See docs/reliability.md.

CHAOS_N ?= 1000
# More flags for both runs of `make chaos`, e.g. CHAOS_FLAGS="-seed 42 -json"; see -help.
CHAOS_FLAGS ?=
CHAOS := go run ./test/chaos

##@ Chaos

.PHONY: test-chaos-short
test-chaos-short: envtest-binaries ## The checker's unit tests, then a short chaos run (100 calls, an operator kill every 2 s); part of make test.
	go test $(RACE) ./test/chaos/...
	$(CHAOS) -n 100 -kill-min 2s -kill-max 2s $(CHAOS_FLAGS)

.PHONY: chaos
chaos: envtest-binaries ## Full chaos runs: CHAOS_N calls, kills every 1–3 s; then again with API server restarts.
	$(CHAOS) -n $(CHAOS_N) -kill-min 1s -kill-max 3s $(CHAOS_FLAGS)
	$(CHAOS) -n $(CHAOS_N) -kill-min 1s -kill-max 3s -restart-apiserver $(CHAOS_FLAGS)
