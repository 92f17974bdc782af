# The egress proxy's image (cmd/egress-proxy). Included by the main Makefile (-include hack/make/*.mk).

.PHONY: images-egress-proxy
images-egress-proxy: ## Build cmd/egress-proxy statically and pack bin/images/egress-proxy.tar (toolgate.local/egress-proxy:dev).
	$(ROOT)/hack/egress-proxy-image.sh
