# The real-cluster chaos run (test/e2e/chaos_test.go): calls of the example tools while the
# operator Pod is deleted every ~5 s (once with grace period 0, once its container SIGKILLed)
# and kube-apiserver is restarted once (hack/cluster.sh restart kube-apiserver), checked by
# test/chaos/check. make test runs a short variant (48 calls) as part of test-e2e; this
# target runs only the chaos spec, with CHAOS_E2E_CALLS calls (default 200), and writes the
# figures and the checker's report to CHAOS_E2E_REPORT. Included by the main Makefile.
# See docs/reliability.md, "Chaos (real cluster)".

CHAOS_E2E_CALLS ?= 200
CHAOS_E2E_RATE ?= 2
CHAOS_E2E_FAULT_EVERY ?= 5s
CHAOS_E2E_REPORT ?= $(ROOT)/.cluster/chaos-e2e/report.json

##@ E2E

.PHONY: chaos-e2e
chaos-e2e: ## The full real-cluster chaos run (make up first if the cluster is not healthy); figures in CHAOS_E2E_REPORT.
	CHAOS_E2E_CALLS=$(CHAOS_E2E_CALLS) CHAOS_E2E_RATE=$(CHAOS_E2E_RATE) CHAOS_E2E_FAULT_EVERY=$(CHAOS_E2E_FAULT_EVERY) \
	CHAOS_E2E_REPORT=$(CHAOS_E2E_REPORT) $(if $(CHAOS_E2E_SEED),CHAOS_E2E_SEED=$(CHAOS_E2E_SEED)) \
	  $(MAKE) test-e2e E2E_FLAGS="--label-filter=chaos $(E2E_FLAGS)" E2E_TIMEOUT=40m
