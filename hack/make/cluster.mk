# Local single-node cluster (real kubelet, containerd, kube-proxy; no Docker). See docs/local-cluster.md.
# Included by the main Makefile (-include hack/make/*.mk).

CLUSTER := $(ROOT)/hack/cluster.sh

##@ Local cluster

.PHONY: cluster-up
cluster-up: ## Start the local cluster (builds what is missing; fast when already up).
	$(CLUSTER) up

.PHONY: cluster-binaries
cluster-binaries: ## Build the local cluster's binaries (Kubernetes, etcd, add-ons into bin/k8s; Kueue into bin/kueue; runsc into bin/gvisor), as make up would (cached).
	$(CLUSTER) binaries

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and remove everything it created (keeps .cluster/pki and logs).
	$(CLUSTER) down

.PHONY: cluster-purge
cluster-purge: ## cluster-down, then remove all of .cluster/ (PKI, tokens, kubeconfigs, logs).
	$(CLUSTER) down --purge

.PHONY: cluster-status
cluster-status: ## Show which cluster components run and whether the node is Ready.
	$(CLUSTER) status

.PHONY: cluster-load
cluster-load: images ## Pack all images and import them into the running cluster.
	$(CLUSTER) load

.PHONY: cluster-smoke
cluster-smoke: ## Smoke-test the running cluster (Job result, deadline, Service routing).
	$(ROOT)/hack/cluster/smoke.sh

.PHONY: images
images: ## Build static binaries and pack images into bin/images/ (pause, smoke, runner, manager, tools).
	$(CLUSTER) images
	$(ROOT)/hack/tools-image.sh

.PHONY: test-imgpack
test-imgpack: ## Unit tests of the image packer.
	go test ./hack/imgpack/...
