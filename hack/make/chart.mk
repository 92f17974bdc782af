# Helm chart (charts/toolgate) and the kustomize install (config/default) that matches it.
# Included by the main Makefile (-include hack/make/*.mk). See docs/install.md.

HELM_VERSION ?= v3.22.0
HELM := $(BIN)/helm
# go install does not stamp the version into the binary; a stamp file says which one it is.
HELM_STAMP := $(BIN)/.helm-$(HELM_VERSION)
CHART := $(ROOT)/charts/toolgate
CHART_OUT := $(BIN)/chart
KUBECTL := $(K8S_BIN)/kubectl

# Generated files the chart carries a copy of (Helm can read files inside the chart only).
CHART_SYNC_FILES := \
	config/rbac/role.yaml=files/rbac/role.yaml \
	config/rbac/agent_role.yaml=files/rbac/agent_role.yaml \
	config/rbac/approver_role.yaml=files/rbac/approver_role.yaml \
	config/rbac/metrics_auth_role.yaml=files/rbac/metrics_auth_role.yaml \
	config/rbac/metrics_reader_role.yaml=files/rbac/metrics_reader_role.yaml \
	config/admission/identity-policy.yaml=files/identity-policy.yaml \
	config/admission/stamp-policy.yaml=files/stamp-policy.yaml \
	config/admission/cancel-policy.yaml=files/cancel-policy.yaml \
	config/admission/record-policy.yaml=files/record-policy.yaml \
	config/admission/credential-policy.yaml=files/credential-policy.yaml

##@ Helm chart

$(HELM_STAMP): | $(BIN)
	@echo "building helm $(HELM_VERSION) from Go modules into bin/ (about a minute)"
	GOBIN=$(BIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	rm -f $(BIN)/.helm-* && touch $@

.PHONY: helm
helm: $(HELM_STAMP) ## Build the pinned helm into bin/helm.

.PHONY: chart-sync
chart-sync: ## Copy the generated CRDs, RBAC and admission policy from config/ into the chart.
	mkdir -p $(CHART)/crds $(CHART)/files/rbac
	rm -f $(CHART)/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART)/crds/
	@for pair in $(CHART_SYNC_FILES); do cp "$${pair%%=*}" "$(CHART)/$${pair#*=}"; done

.PHONY: chart-check-sync
chart-check-sync: ## Fail when the chart's copies differ from config/ (fix: make chart-sync).
	@status=0; \
	diff -r config/crd/bases $(CHART)/crds >/dev/null || { diff -r config/crd/bases $(CHART)/crds | head -20; status=1; }; \
	for pair in $(CHART_SYNC_FILES); do \
	  cmp -s "$${pair%%=*}" "$(CHART)/$${pair#*=}" || { echo "$(CHART)/$${pair#*=} differs from $${pair%%=*}"; status=1; }; \
	done; \
	if [ $$status -ne 0 ]; then echo "the chart is out of sync with config/: run make chart-sync"; exit 1; fi

.PHONY: chart-test
chart-test: $(HELM_STAMP) chart-check-sync ## helm lint, helm template (several value sets), chart == kustomize config/default.
	@test -x $(KUBECTL) || $(MAKE) envtest-binaries
	mkdir -p $(CHART_OUT)
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) -f $(CHART)/ci/local-values.yaml
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system --include-crds > $(CHART_OUT)/default.yaml
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system -f $(CHART)/ci/local-values.yaml > $(CHART_OUT)/local.yaml
	$(HELM) template other $(CHART) --kube-version $(K8S_VERSION) -n other --set rbac.create=false,rbac.userRoles=false,admissionPolicy.enabled=false,metrics.enabled=false,leaderElection.enabled=false,replicaCount=1,serviceAccount.create=false > $(CHART_OUT)/minimal.yaml
	@grep -q 'name: toolgate-tools-deny-all' $(CHART_OUT)/local.yaml || { echo "local values render no NetworkPolicy"; exit 1; }
	go run ./hack/impersonation -want narrow $(CHART_OUT)/local.yaml
	@! grep -q 'kind: ClusterRole$$' $(CHART_OUT)/minimal.yaml || { echo "rbac.create=false still renders a ClusterRole"; exit 1; }
	@! grep -qE 'kind: PodDisruptionBudget|podAntiAffinity' $(CHART_OUT)/minimal.yaml || { echo "one replica still renders a PodDisruptionBudget or anti-affinity"; exit 1; }
	@grep -q 'preferredDuringSchedulingIgnoredDuringExecution' $(CHART_OUT)/default.yaml || { echo "two replicas render no soft anti-affinity"; exit 1; }
	@! $(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) --set leaderElection.enabled=false >/dev/null 2>&1 || { echo "two replicas without leader election rendered"; exit 1; }
	$(HELM) template other $(CHART) --kube-version $(K8S_VERSION) -n other --set apiPriorityAndFairness.enabled=false > $(CHART_OUT)/no-apf.yaml
	@! grep -q '^apiVersion: flowcontrol.apiserver.k8s.io/' $(CHART_OUT)/no-apf.yaml || { echo "apiPriorityAndFairness.enabled=false still renders flowcontrol objects"; exit 1; }
	$(HELM) template other $(CHART) --kube-version $(K8S_VERSION) -n other -f $(CHART)/ci/apf-values.yaml --show-only templates/flowcontrol.yaml > $(CHART_OUT)/apf.yaml
	go run ./hack/installdiff $(CHART_OUT)/apf.yaml $(CHART)/ci/apf-expected.yaml
	@! grep -q 'component: gateway' $(CHART_OUT)/default.yaml || { echo "the MCP gateway is rendered by default"; exit 1; }
	$(HELM) lint --strict $(CHART) --set gateway.enabled=true,gateway.namespace=agents,gateway.tls.secretName=gw-tls
	@# The gateway's default impersonates the ServiceAccounts of its namespace only; anyUser=true anyone.
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system \
	  --set gateway.enabled=true,gateway.namespace=agents > $(CHART_OUT)/gateway.yaml
	@grep -q 'name: toolgate-gateway-impersonate' $(CHART_OUT)/gateway.yaml || { echo "the gateway's default renders no ServiceAccount-only Role"; exit 1; }
	go run ./hack/impersonation -want narrow $(CHART_OUT)/gateway.yaml
	@! grep -q -- '- --session-per-client' $(CHART_OUT)/gateway.yaml || { echo "the gateway gives a session per client by default"; exit 1; }
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system --show-only templates/gateway.yaml \
	  --set gateway.enabled=true,gateway.namespace=agents,gateway.scope=coding,gateway.sessionPerClient=true > $(CHART_OUT)/gateway-sessions.yaml
	@grep -q -- '- --scope=coding' $(CHART_OUT)/gateway-sessions.yaml && grep -q -- '- --session-per-client' $(CHART_OUT)/gateway-sessions.yaml || { echo "gateway.sessionPerClient renders no --session-per-client"; exit 1; }
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system \
	  --set gateway.enabled=true,gateway.namespace=agents,gateway.impersonate.anyUser=true > $(CHART_OUT)/gateway-wide.yaml
	go run ./hack/impersonation -want wide $(CHART_OUT)/gateway-wide.yaml
	@! grep -q 'name: toolgate-gateway-impersonate' $(CHART_OUT)/gateway-wide.yaml || { echo "gateway anyUser=true still renders the ServiceAccount-only Role"; exit 1; }
	@! grep -q 'component: console' $(CHART_OUT)/default.yaml || { echo "the approval console is rendered by default"; exit 1; }
	@# The console's default names whom it may act as, and an enabled console that names no one does not render.
	$(HELM) lint --strict $(CHART) --set console.enabled=true,console.tls.secretName=console-tls,console.impersonate.users={alice}
	@! $(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) --set console.enabled=true >/dev/null 2>&1 || { echo "a console that may act as no one rendered"; exit 1; }
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system --set console.enabled=true,console.impersonate.anyUser=true > $(CHART_OUT)/console.yaml
	@grep -q -- '- --auth=token' $(CHART_OUT)/console.yaml || { echo "the deployed console does not authenticate tokens"; exit 1; }
	go run ./hack/impersonation -want wide $(CHART_OUT)/console.yaml
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system --show-only templates/console.yaml \
	  --set console.enabled=true,console.impersonate.users={alice},console.impersonate.groups={approvers},console.impersonate.serviceAccountNamespaces={agents} > $(CHART_OUT)/console-narrow.yaml
	go run ./hack/impersonation -want narrow $(CHART_OUT)/console-narrow.yaml
	@grep -q 'resourceNames: \["alice"\]' $(CHART_OUT)/console-narrow.yaml || { echo "console anyUser=false does not name its users"; exit 1; }
	@grep -q -- '- "approvers"' $(CHART_OUT)/console-narrow.yaml && grep -q -- '- system:serviceaccounts:agents' $(CHART_OUT)/console-narrow.yaml || { echo "console anyUser=false does not name its groups"; exit 1; }
	@grep -q 'name: toolgate-console-impersonate' $(CHART_OUT)/console-narrow.yaml || { echo "console anyUser=false renders no ServiceAccount Role"; exit 1; }
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system --set tracing.endpoint=jaeger:4317,tracing.toolEndpoint=http://198.51.100.1:4318 > $(CHART_OUT)/tracing.yaml
	@grep -q -- '- --tracing-tool-endpoint=http://198.51.100.1:4318' $(CHART_OUT)/tracing.yaml || { echo "tracing.toolEndpoint renders no --tracing-tool-endpoint"; exit 1; }
	@! $(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) --set tracing.toolEndpoint=http://x:4318 >/dev/null 2>&1 || { echo "a tool endpoint without tracing.endpoint rendered"; exit 1; }
	$(KUBECTL) kustomize config/default > $(CHART_OUT)/kustomize.yaml
	go run ./hack/installdiff -ignore-kind Namespace $(CHART_OUT)/default.yaml $(CHART_OUT)/kustomize.yaml
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system -f $(CHART)/ci/local-values.yaml \
	  --show-only templates/networkpolicy.yaml > $(CHART_OUT)/networkpolicy.yaml
	$(KUBECTL) kustomize config/default/networkpolicy > $(CHART_OUT)/kustomize-networkpolicy.yaml
	go run ./hack/installdiff $(CHART_OUT)/networkpolicy.yaml $(CHART_OUT)/kustomize-networkpolicy.yaml
	$(HELM) lint --strict $(CHART) -f $(CHART)/ci/notify-values.yaml
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system -f $(CHART)/ci/notify-values.yaml > $(CHART_OUT)/notify.yaml
	@grep -q -- '--approval-sink-key-file=/etc/toolgate/approval-sink/hmac-key' $(CHART_OUT)/notify.yaml || { echo "the default approval sink's key is not mounted"; exit 1; }
	@test "$$(grep -c 'namespace: team-' $(CHART_OUT)/notify.yaml)" -eq 2 || { echo "no RoleBindings for the approval sink Secrets"; exit 1; }
	@grep -q -- '- --approval-sink-allow-cidrs=10.96.0.10/32,192.168.7.0/24' $(CHART_OUT)/notify.yaml && grep -q -- '- --approval-sink-deny-cidrs=203.0.113.0/24' $(CHART_OUT)/notify.yaml || { echo "the sink address lists are not passed to the operator"; exit 1; }
	@! grep -qE -- '--approval-sink|-approval-sink-secrets' $(CHART_OUT)/default.yaml || { echo "approval notifications are rendered by default"; exit 1; }
	@# make up's install: the local values plus the sink CA file (hack/up.sh --set-file).
	printf -- '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n' > $(CHART_OUT)/sink-ca.crt
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system -f $(CHART)/ci/local-values.yaml \
	  --set-file approvalNotifications.caBundle=$(CHART_OUT)/sink-ca.crt > $(CHART_OUT)/local-sink-ca.yaml
	@grep -q -- '- --approval-sink-ca-file=/etc/toolgate/approval-sink-ca/ca.crt' $(CHART_OUT)/local-sink-ca.yaml || { echo "make up's sink CA is not passed to the operator"; exit 1; }
	@grep -q 'mountPath: /etc/toolgate/approval-sink-ca' $(CHART_OUT)/local-sink-ca.yaml && grep -q '^  name: toolgate-approval-sink-ca$$' $(CHART_OUT)/local-sink-ca.yaml || { echo "make up's sink CA ConfigMap is not mounted"; exit 1; }
	@grep -A2 'name: toolgate-approval-sink-secrets' $(CHART_OUT)/local-sink-ca.yaml | grep -q 'namespace: toolgate-demo' || { echo "the local values grant no Secret read in toolgate-demo"; exit 1; }
	@! $(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) --set approvalNotifications.defaultSink.url=https://x >/dev/null 2>&1 || { echo "a default sink without a key rendered"; exit 1; }
	$(HELM) lint --strict $(CHART) -f $(CHART)/ci/egress-values.yaml
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system -f $(CHART)/ci/egress-values.yaml > $(CHART_OUT)/egress.yaml
	@grep -q -- '- --egress-proxy-url=http://10.0.0.12:3128' $(CHART_OUT)/egress.yaml && grep -q -- '- --egress-proxy-key-file=/etc/toolgate/egress-proxy/key' $(CHART_OUT)/egress.yaml || { echo "the egress proxy is not passed to the operator"; exit 1; }
	@grep -q -- '- --rate=20$$' $(CHART_OUT)/egress.yaml && grep -q -- '- --burst=100$$' $(CHART_OUT)/egress.yaml || { echo "the egress proxy's rate limit is not rendered"; exit 1; }
	@grep -q -- '- --deny-cidrs=10.244.0.0/24' $(CHART_OUT)/egress.yaml && grep -q -- '- --hosts-file=' $(CHART_OUT)/egress.yaml && grep -q 'clusterIP: 10.0.0.12' $(CHART_OUT)/egress.yaml || { echo "the egress proxy's deny list, test hosts or ClusterIP are not rendered"; exit 1; }
	@! grep -q -- 'egress-proxy' $(CHART_OUT)/default.yaml || { echo "the egress proxy is rendered by default"; exit 1; }
	@grep -q -- '- --ca-cert-file=/etc/toolgate/egress-ca/tls.crt' $(CHART_OUT)/egress.yaml && grep -q -- '- --bind-wait=10s' $(CHART_OUT)/egress.yaml && grep -q '^  name: toolgate-egress-ca$$' $(CHART_OUT)/egress.yaml || { echo "the egress CA is not generated or passed to the proxy, or binding is not required"; exit 1; }
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system -f $(CHART)/ci/egress-values.yaml --show-only templates/deployment.yaml > $(CHART_OUT)/egress-manager.yaml
	@grep -q -- '- --egress-proxy-ca-file=/etc/toolgate/egress-ca/ca.crt' $(CHART_OUT)/egress-manager.yaml && ! grep -q 'tls.key' $(CHART_OUT)/egress-manager.yaml || { echo "the operator does not get the egress CA's certificate, or gets its key"; exit 1; }
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system -f $(CHART)/ci/egress-values.yaml \
	  --set egressProxy.ca.existingSecret=my-ca,egressProxy.bindWait=0s --set-file egressProxy.upstreamCABundle=$(CHART_OUT)/sink-ca.crt > $(CHART_OUT)/egress-own-ca.yaml
	@! grep -q 'name: toolgate-egress-ca$$' $(CHART_OUT)/egress-own-ca.yaml && test "$$(grep -c 'secretName: my-ca$$' $(CHART_OUT)/egress-own-ca.yaml)" -eq 2 || { echo "egressProxy.ca.existingSecret is not what the proxy and the operator mount"; exit 1; }
	@grep -q -- '- --upstream-ca-file=/etc/toolgate/egress-upstream-ca/ca.crt' $(CHART_OUT)/egress-own-ca.yaml && grep -q 'name: toolgate-egress-proxy-upstream-ca' $(CHART_OUT)/egress-own-ca.yaml && grep -q -- '- --bind-wait=0s' $(CHART_OUT)/egress-own-ca.yaml || { echo "egressProxy.upstreamCABundle or bindWait is not rendered"; exit 1; }

.PHONY: chart-dry-run
chart-dry-run: $(HELM_STAMP) ## Server-side dry run of the chart and config/examples against the running local cluster.
	$(HELM) template toolgate $(CHART) --kube-version $(K8S_VERSION) -n toolgate-system -f $(CHART)/ci/local-values.yaml --include-crds \
	  | $(KUBECTL) --kubeconfig $(ROOT)/.cluster/kubeconfig apply --dry-run=server -f - 2>&1 \
	  | grep -v "missing the kubectl.kubernetes.io/last-applied-configuration annotation"
