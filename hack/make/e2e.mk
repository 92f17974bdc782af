# End-to-end tests against the real local cluster (test/e2e). Included by the main Makefile
# (-include hack/make/*.mk). Not part of `make test`: they need the cluster, toolgate
# installed by its chart and the examples — `make up` — which this target runs only when
# `hack/cluster.sh status` says the cluster is not healthy.

E2E_TIMEOUT ?= 20m
E2E_FLAGS ?=

##@ E2E

.PHONY: test-e2e
test-e2e: $(GINKGO) ## End-to-end tests on the local cluster (make up first if it is not healthy).
	@if $(ROOT)/hack/cluster.sh status >/dev/null 2>&1 \
	    && $(K8S_BIN)/kubectl --kubeconfig $(ROOT)/.cluster/kubeconfig -n toolgate-system \
	         rollout status deployment/toolgate --timeout=5s >/dev/null 2>&1 \
	    && $(K8S_BIN)/kubectl --kubeconfig $(ROOT)/.cluster/kubeconfig -n toolgate-demo \
	         get toolscope demo >/dev/null 2>&1; then \
	  echo "test-e2e: cluster healthy and toolgate installed; skipping make up"; \
	else \
	  echo "test-e2e: cluster not ready; running make up"; \
	  $(MAKE) up; \
	fi
	$(GINKGO) -v --timeout=$(E2E_TIMEOUT) $(E2E_FLAGS) $(ROOT)/test/e2e
