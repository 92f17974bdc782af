# shellcheck shell=bash
# The cluster's add-ons: CoreDNS (cluster DNS), the volume provisioner with its StorageClass, the
# gvisor RuntimeClass, and Kueue (Job admission). Sourced by hack/cluster.sh.

# start_coredns NODE_IP: cluster DNS. CoreDNS (hack/addons/coredns) answers on the node address,
# port 53, behind the kube-dns Service (10.0.0.10, the kubelet's clusterDNS), from the API (the
# kubernetes plugin: Services, Pods) and from a hosts file the e2e suites add test names to
# ($CONF/dns-hosts, re-read every 2 s). Nothing is forwarded off this machine.
start_coredns() {
  local ip="$1"
  [ -f "$CONF/dns-hosts" ] ||
    printf '# name -> address for Pods on this cluster (CoreDNS hosts plugin)\n%s allowed.test other.test\n' "$ip" >"$CONF/dns-hosts"
  cat >"$CONF/Corefile" <<EOF
.:53 {
    bind $ip
    errors
    health 127.0.0.1:$COREDNS_HEALTH_PORT
    ready 127.0.0.1:$COREDNS_READY_PORT
    hosts $CONF/dns-hosts {
        reload 2s
        fallthrough
    }
    kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
        kubeconfig $KUBECONFIGS/coredns.kubeconfig toolgate-local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
}
EOF
  kc apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:coredns"}
---
apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS}
spec:
  clusterIP: $DNS_SERVICE_IP
  ports:
  - {name: dns, port: 53, protocol: UDP}
  - {name: dns-tcp, port: 53, protocol: TCP}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kube-dns-node
  namespace: kube-system
  labels: {kubernetes.io/service-name: kube-dns, endpointslice.kubernetes.io/managed-by: toolgate.local-cluster}
addressType: IPv4
endpoints:
- addresses: ["$ip"]
  conditions: {ready: true}
ports:
- {name: dns, port: 53, protocol: UDP}
- {name: dns-tcp, port: 53, protocol: TCP}
EOF
  start_component coredns -conf "$CONF/Corefile"
}

# start_provisioner: dynamic volumes (hack/addons/provisioner: one hostPath directory per claim
# under $DATA/volumes, mode 0777 inside a root-only parent) for the default StorageClass
# toolgate-local; and the gvisor RuntimeClass (containerd's runsc handler, config.sh).
start_provisioner() {
  kc apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:toolgate-provisioner"}
rules:
- {apiGroups: [""], resources: [persistentvolumes], verbs: [get, list, watch, create, delete]}
- {apiGroups: [""], resources: [persistentvolumeclaims], verbs: [get, list, watch, update]}
- {apiGroups: [storage.k8s.io], resources: [storageclasses], verbs: [get, list, watch]}
- {apiGroups: ["", events.k8s.io], resources: [events], verbs: [create, update, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:toolgate-provisioner"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:toolgate-provisioner"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:toolgate-provisioner"}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $STORAGE_CLASS
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: $PROVISIONER_NAME
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
EOF
  start_component provisioner --kubeconfig "$KUBECONFIGS/provisioner.kubeconfig" \
    --name "$PROVISIONER_NAME" --root "$DATA/volumes" --metrics-address "127.0.0.1:$PROVISIONER_PORT"
}

dns_ready() { curl -fsS -m 2 "http://127.0.0.1:$COREDNS_READY_PORT/ready" >/dev/null; }
dns_service_routed() { iptables -w -t nat -S KUBE-SERVICES 2>/dev/null | grep -q -- "-d $DNS_SERVICE_IP/32"; }
provisioner_healthy() { curl -fsS -m 2 "http://127.0.0.1:$PROVISIONER_PORT/metrics" >/dev/null; }

# kueue_env: hack/addons/kueue.sh's settings for this cluster.
kueue_env() {
  KUEUE_STATE="$KUEUE_STATE" KUEUE_ADMIN_KUBECONFIG="$ADMIN_KUBECONFIG" \
    KUEUE_KUBECONFIG="$KUBECONFIGS/kueue.kubeconfig" KUBECTL="$K8S_BIN/kubectl" \
    KUEUE_CA_DIR="$PKI" KUEUE_HEALTH_PORT="$KUEUE_HEALTH_PORT" KUEUE_METRICS_PORT="$KUEUE_METRICS_PORT" \
    KUEUE_WEBHOOK_PORT="$KUEUE_WEBHOOK_PORT" "$@"
}

# start_kueue: Kueue's controller manager (hack/addons/kueue.sh, docs/kueue-local.md) as user
# system:kueue: its CRDs and RBAC applied and Established, its serving certificate (signed by
# the cluster CA; a copy at /etc/kueue/metrics/certs, where Kueue reads it) and Configuration
# in .cluster/kueue, then the manager as a component. Its queues come later, once the operator
# runs (hack/up.sh: hack/addons/kueue.sh queues). Fails `up` with a message if any step fails.
start_kueue() {
  local start out
  start="$(now_us)"
  if ! out="$(kueue_env "$ROOT/hack/addons/kueue.sh" prepare 2>&1)"; then
    printf '%s\n' "$out" >&2
    die "Kueue: preparing it failed (above: hack/addons/kueue.sh prepare; docs/kueue-local.md)"
  fi
  log "${out##*$'\n'} (Kueue prepared in +$(fmt_secs "$(($(now_us) - start))")s)"
  # Where this run's log starts: a restart appends, and the readiness check reads only what
  # this run wrote.
  KUEUE_LOG_FROM="$(stat -c %s "$LOGS/kueue.log" 2>/dev/null || echo 0)"
  [ "${LOG_APPEND:-0}" = 1 ] || KUEUE_LOG_FROM=0
  start_component kueue --config "$KUEUE_STATE/config.yaml" \
    --kubeconfig "$KUBECONFIGS/kueue.kubeconfig" --zap-log-level=info
}

# kueue_ready: /readyz answers and this run's Job controller runs its workers (only then does
# Kueue admit: ≈ 2 s after /readyz).
kueue_ready() {
  KUEUE_LOG="$LOGS/kueue.log" KUEUE_LOG_FROM="${KUEUE_LOG_FROM:-0}" kueue_env "$ROOT/hack/addons/kueue.sh" status
}

# stop_kueue_certs: remove the metrics certificate Kueue reads from /etc/kueue (the manager is
# stopped as a component before).
stop_kueue_certs() { kueue_env "$ROOT/hack/addons/kueue.sh" stop; }
