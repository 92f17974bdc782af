# make up / make down: the local cluster with toolgate installed by its Helm chart, and the
# demo (hack/up.sh). Included by the main Makefile (-include hack/make/*.mk).

##@ Demo

.PHONY: up
up: cli ## Local cluster + images + helm install + examples + demo calls, with a result table (the first run, from nothing, ~22 min on 2 cores: it builds Kubernetes).
	$(ROOT)/hack/up.sh

.PHONY: demo
demo: ## Only re-run the demo calls against an installed toolgate (make up first).
	$(ROOT)/hack/up.sh demo

.PHONY: down
down: ## Stop the local cluster and remove everything it created (same as cluster-down).
	$(ROOT)/hack/cluster.sh down
