# gVisor for the local cluster's `gvisor` RuntimeClass (docs/local-cluster-limits.md, "gVisor"):
# runsc built from gVisor's Go module into bin/gvisor; `make up` builds it too
# (hack/cluster/prereqs.sh). Included by the main Makefile.

##@ gVisor

.PHONY: gvisor
gvisor: ## Build gVisor's runsc (hack/tools/gvisor/go.mod, a pinned pseudo-version of gvisor.dev/gvisor) into bin/gvisor (cached; the first build takes minutes).
	$(ROOT)/hack/addons/gvisor.sh build
