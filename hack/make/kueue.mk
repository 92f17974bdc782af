# Kueue for the local cluster (docs/kueue-local.md): built from Go modules into bin/kueue and
# shown against envtest; `make up` starts it (hack/cluster/addons.sh) and applies its queues
# (hack/up.sh). Included by the main Makefile.

##@ Kueue

.PHONY: kueue
kueue: ## Build Kueue's manager (hack/tools/kueue/go.mod, v0.17.0) into bin/kueue and render its manifests (cached; the first build takes minutes).
	$(ROOT)/hack/addons/kueue.sh build
	$(ROOT)/hack/addons/kueue.sh manifests

.PHONY: test-kueue-smoke
test-kueue-smoke: envtest-binaries kueue ## Kueue against a throwaway envtest API server: a suspended Job admitted, a burst held at the ClusterQueue's cpu.
	KUEUE_SMOKE=1 go test -v -count=1 -timeout 15m ./hack/addons/kueue/
