# End-to-end tests against the real local cluster (test/e2e). Included by the main Makefile
# (-include hack/make/*.mk) and part of `make test`. They need the cluster, toolgate
# installed by its chart and the examples — `make up` — which this target runs when
# `hack/cluster.sh status` says the cluster is not healthy; a cluster it started itself it
# also tears down afterwards, pass or fail (E2E_KEEP_CLUSTER=1 keeps it for debugging). A
# cluster that was already up stays up; with TRACING=1 (make test sets it) on a cluster that
# `make up` brought up without it, it runs `make up` again, which starts Jaeger and
# redeploys toolgate exporting to it, so that the trace specs can run.
# It builds bin/toolgate (make cli) and installs test/ts's TypeScript SDK (make ts-sdk)
# first: the specs of docs/connect-your-agent.md (label connect) run its recipes with them.

E2E_TIMEOUT ?= 20m
# The specs run in E2E_PROCS parallel ginkgo processes (they mostly wait on Pods); the ones
# that restart, kill or load what every spec shares (the operator, the API server, the node)
# are marked Serial and run alone at the end.
E2E_PROCS ?= 4
E2E_FLAGS ?=
E2E_KEEP_CLUSTER ?=

##@ E2E

.PHONY: test-e2e
test-e2e: chromium cli ts-sdk ts-client $(GINKGO) ## End-to-end tests on the local cluster (make up first if it is not healthy).
	@started=; traced=; \
	if $(ROOT)/hack/cluster.sh status >/dev/null 2>&1 \
	    && $(K8S_BIN)/kubectl --kubeconfig $(ROOT)/.cluster/kubeconfig -n toolgate-system \
	         rollout status deployment/toolgate --timeout=5s >/dev/null 2>&1 \
	    && $(K8S_BIN)/kubectl --kubeconfig $(ROOT)/.cluster/kubeconfig -n toolgate-demo \
	         get toolscope demo >/dev/null 2>&1; then \
	  if [ "$(TRACING)" = 1 ] && ! { $(ROOT)/hack/jaeger/jaeger.sh status >/dev/null 2>&1 \
	        && $(K8S_BIN)/kubectl --kubeconfig $(ROOT)/.cluster/kubeconfig -n toolgate-system \
	             get deployment/toolgate -o jsonpath='{.spec.template.spec.containers[0].args}' \
	             | grep -q -e '--tracing-endpoint='; }; then \
	    echo "test-e2e: TRACING=1 but the running cluster does not export to Jaeger; running make up TRACING=1 (redeploys toolgate; the cluster stays up afterwards)"; \
	    traced=no; \
	  else \
	    echo "test-e2e: cluster healthy and toolgate installed; skipping make up"; \
	  fi; \
	else \
	  echo "test-e2e: cluster not ready; running make up"; \
	  started=yes; \
	fi; \
	rc=0; \
	if [ -n "$$started$$traced" ]; then $(MAKE) up || rc=$$?; fi; \
	if [ $$rc = 0 ]; then $(GINKGO) -v --procs=$(E2E_PROCS) --timeout=$(E2E_TIMEOUT) $(E2E_FLAGS) $(ROOT)/test/e2e || rc=$$?; fi; \
	if [ -n "$$started" ] && [ -z "$(E2E_KEEP_CLUSTER)" ]; then \
	  echo "test-e2e: tearing down the cluster this run started (E2E_KEEP_CLUSTER=1 keeps it)"; \
	  $(MAKE) down || true; \
	fi; \
	exit $$rc
