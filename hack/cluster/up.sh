# shellcheck shell=bash
# Starting the components, readiness checks, `up` and `status`.

start_containerd() {
  start_component containerd --config "$CONF/containerd.toml"
  wait_for containerd "containerd serving" 20 timeout 2 ctr -a "$CONTAINERD_SOCK" version
}

start_etcd() {
  local client="http://127.0.0.1:$ETCD_CLIENT_PORT" peer="http://127.0.0.1:$ETCD_PEER_PORT"
  mkdir -p "$DATA/etcd"
  chmod 700 "$DATA/etcd"
  # --unsafe-no-fsync: a throw-away test cluster, speed over durability.
  start_component etcd --name "$NODE_NAME" --data-dir "$DATA/etcd" \
    --listen-client-urls "$client" --advertise-client-urls "$client" \
    --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
    --initial-cluster "$NODE_NAME=$peer" --unsafe-no-fsync --log-level warn
}

start_apiserver() {
  local ip="$1"
  start_component kube-apiserver \
    --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --secure-port "$APISERVER_PORT" --advertise-address "$ip" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --token-auth-file "$PKI/tokens.csv" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --kubelet-client-certificate "$PKI/kubelet-client.crt" --kubelet-client-key "$PKI/kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --profiling=false
}

start_controller_manager() {
  local kcfg="$KUBECONFIGS/controller-manager.kubeconfig"
  # --controllers=* : naming individual disabled controllers failed on this machine.
  start_component kube-controller-manager --kubeconfig "$kcfg" \
    --authentication-kubeconfig "$kcfg" --authorization-kubeconfig "$kcfg" \
    --controllers='*' --leader-elect=false --bind-address 127.0.0.1 \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --use-service-account-credentials=false \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --profiling=false
}

start_scheduler() {
  local kcfg="$KUBECONFIGS/scheduler.kubeconfig"
  start_component kube-scheduler --kubeconfig "$kcfg" \
    --authentication-kubeconfig "$kcfg" --authorization-kubeconfig "$kcfg" \
    --leader-elect=false --bind-address 127.0.0.1 --profiling=false
}

start_kubelet() {
  local ip="$1"
  start_component kubelet --config "$CONF/kubelet.yaml" \
    --kubeconfig "$KUBECONFIGS/kubelet.kubeconfig" \
    --root-dir "$DATA/kubelet" --cert-dir "$DATA/kubelet/pki" \
    --hostname-override "$NODE_NAME" --node-ip "$ip"
}

start_kube_proxy() {
  # Zero conntrack settings leave the host's conntrack sysctls alone; no localhost NodePorts
  # leaves route_localnet alone.
  start_component kube-proxy --kubeconfig "$KUBECONFIGS/kube-proxy.kubeconfig" \
    --hostname-override "$NODE_NAME" --proxy-mode iptables --cluster-cidr "$POD_CIDR" \
    --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256 \
    --conntrack-max-per-core=0 --conntrack-tcp-timeout-established=0 \
    --conntrack-tcp-timeout-close-wait=0 --iptables-localhost-nodeports=false
}

# start_netpol: the NetworkPolicy enforcer (hack/netpol: kube-network-policies plus the guard
# for traffic to this machine and for Pods whose address is not published yet). RBAC first.
start_netpol() {
  kc apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:kube-network-policies"}
rules:
- {apiGroups: [""], resources: [pods, namespaces, nodes], verbs: [get, list, watch]}
- {apiGroups: [networking.k8s.io], resources: [networkpolicies], verbs: [get, list, watch]}
- {apiGroups: ["", events.k8s.io], resources: [events], verbs: [create, patch, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:kube-network-policies"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:kube-network-policies"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kube-network-policies"}
EOF
  start_component kube-network-policies --kubeconfig "$KUBECONFIGS/kube-network-policies.kubeconfig" \
    --hostname-override "$NODE_NAME" --pod-cidr "$POD_CIDR" --nfqueue-id "$NETPOL_QUEUE" \
    --metrics-bind-address "127.0.0.1:$NETPOL_PORT"
}

# netpol_enforcing: the guard chain is in place and the enforcer listens on its queue (it
# binds the queue once its caches synced).
netpol_enforcing() {
  iptables -w -t mangle -S TOOLGATE-NETPOL >/dev/null 2>&1 &&
    awk -v q="$NETPOL_QUEUE" '$1 == q {found = 1} END {exit !found}' /proc/net/netfilter/nfnetlink_queue
}

# ---- checks -------------------------------------------------------------------------------------
# Every probe has a timeout: a hung listener must not hang `up`.
etcd_healthy() { curl -fsS -m 2 "http://127.0.0.1:$ETCD_CLIENT_PORT/health" | grep -q '"health":"true"'; }
apiserver_ready() { curl -fsS -m 2 --cacert "$PKI/ca.crt" "$API_URL/readyz" >/dev/null; }
https_healthy() { curl -fsSk -m 2 "https://127.0.0.1:$1/healthz" >/dev/null; }
http_healthy() { curl -fsS -m 2 "http://127.0.0.1:$1/healthz" >/dev/null; }
node_ready() {
  [ "$(kc get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
default_sa() { kc get serviceaccount default -n default >/dev/null 2>&1; }
kubernetes_service_routed() { iptables -w -t nat -S KUBE-SERVICES 2>/dev/null | grep -q -- "-d $SERVICE_IP/32"; }

all_running() {
  local c
  for c in "${COMPONENTS[@]}"; do component_pid "$c" >/dev/null || return 1; done
}

cluster_healthy() { all_running && apiserver_ready && node_ready; }

# leftovers: anything a previous run left behind (processes, pid files, runtime state, mounts).
leftovers() {
  local c
  for c in "${COMPONENTS[@]}"; do
    [ -f "$RUN/$c.pid" ] && return 0
  done
  [ -d "$DATA" ] || [ -d "$RUN" ] || [ -s "$HOSTREC/created-paths" ] || ip link show "$BRIDGE" >/dev/null 2>&1
}

# check_ports: fail early and clearly when another program holds one of our ports.
check_ports() {
  local port users
  for port in "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT" "$APISERVER_PORT" 10248 10249 10250 10256 10257 10259 "$NETPOL_PORT" \
    "$PROVISIONER_PORT" "$COREDNS_HEALTH_PORT" "$COREDNS_READY_PORT" "$KUEUE_HEALTH_PORT" "$KUEUE_METRICS_PORT" \
    "$KUEUE_WEBHOOK_PORT"; do
    users="$(ss -Hltnp "sport = :$port" 2>/dev/null || true)"
    [ -z "$users" ] || die "port $port is already in use: $users"
  done
}

# ---- up -----------------------------------------------------------------------------------------
write_env_file() {
  cat >"$STATE/cluster.env" <<EOF
# source this file: settings of the local toolgate cluster
export KUBECONFIG=$ADMIN_KUBECONFIG
export TOOLGATE_KUBECONFIG_ADMIN=$ADMIN_KUBECONFIG
export TOOLGATE_KUBECONFIG_AGENT=$KUBECONFIGS/agent.kubeconfig
export TOOLGATE_KUBECONFIG_APPROVER=$KUBECONFIGS/approver.kubeconfig
export TOOLGATE_NODE_NAME=$NODE_NAME
export TOOLGATE_NODE_IP=$1
export TOOLGATE_API_URL=$API_URL
export TOOLGATE_CONTAINERD_SOCK=$CONTAINERD_SOCK
export TOOLGATE_KUBECTL=$K8S_BIN/kubectl
EOF
}

summary() {
  cat <<EOF
cluster: toolgate-local, Kubernetes $K8S_VERSION, node $NODE_NAME ($(cat "$PKI/node-ip"))
  apiserver   $API_URL
  kubeconfig  $ADMIN_KUBECONFIG (admin, system:masters)
              $KUBECONFIGS/agent.kubeconfig, $KUBECONFIGS/approver.kubeconfig (no groups)
  kubectl     $K8S_BIN/kubectl   (or: source $STATE/cluster.env)
  images      $(ctr_k8s images ls -q 2>/dev/null | grep '^toolgate.local/' | tr '\n' ' ')
  kueue       Kueue $(cut -d+ -f1 "$ROOT/bin/kueue/kueue-manager.version" 2>/dev/null), health http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz (queues: make up)
  logs        $LOGS/
  stop        hack/cluster.sh down
EOF
}

cmd_up() {
  if cluster_healthy; then
    log "cluster already up and healthy"
    summary
    return 0
  fi
  if leftovers; then
    log "cleaning up what a previous run left behind"
    cmd_down
  fi
  local ip apt
  # apt waits on the network and dpkg, the build on the CPU: on a new machine they overlap.
  timed ensure_packages &
  apt=$!
  ensure_binaries
  wait "$apt" || die "installing the Debian packages failed (above)"
  timed ensure_base_images
  ip="$(node_ip)"
  check_ports
  log "prerequisites ready (node $NODE_NAME, address $ip)"

  timed record_host_state
  timed ensure_pki "$ip"
  timed ensure_kubeconfigs
  rm -rf "$LOGS"
  timed write_configs "$ip"
  timed ensure_egress_guard

  start_containerd
  load_images "$IMAGES_DIR"/*.tar
  log "images imported: $(cd "$IMAGES_DIR" && echo *.tar)"
  start_etcd
  wait_for etcd "etcd healthy" 30 etcd_healthy
  start_apiserver "$ip"
  wait_for kube-apiserver "kube-apiserver ready" 60 apiserver_ready

  start_controller_manager
  start_scheduler
  start_kubelet "$ip"
  start_kube_proxy
  start_netpol
  start_coredns "$ip"
  start_provisioner
  # Kueue's CRDs and RBAC (≈ 3 s) go in while the node comes up; its manager needs only the API.
  start_kueue
  wait_for kube-proxy "kube-proxy healthy" 30 http_healthy 10256
  wait_for kube-network-policies "NetworkPolicy enforcer healthy" 30 http_healthy "$NETPOL_PORT"
  wait_for kube-network-policies "NetworkPolicy enforcer bound to its queue, guard in place" 30 netpol_enforcing
  wait_for kube-scheduler "kube-scheduler healthy" 30 https_healthy 10259
  wait_for kube-controller-manager "kube-controller-manager healthy" 30 https_healthy 10257
  wait_for kubelet "node $NODE_NAME Ready" 60 node_ready
  wait_for kube-controller-manager "default ServiceAccount present" 60 default_sa
  wait_for kube-proxy "Service $SERVICE_IP routed" 30 kubernetes_service_routed
  wait_for coredns "CoreDNS ready" 30 dns_ready
  wait_for kube-proxy "Service kube-dns ($DNS_SERVICE_IP) routed" 30 dns_service_routed
  wait_for provisioner "volume provisioner serving" 30 provisioner_healthy
  wait_for kueue "Kueue ready (its Job controller running)" 60 kueue_ready

  write_env_file "$ip"
  log "cluster up"
  summary
}

cmd_status() {
  local c pid rc=0
  for c in "${COMPONENTS[@]}"; do
    if pid="$(component_pid "$c")"; then
      printf '  %-24s running (pid %s)\n' "$c" "$pid"
    else
      printf '  %-24s stopped\n' "$c"
      rc=1
    fi
  done
  if apiserver_ready 2>/dev/null; then
    echo "  apiserver               ready at $API_URL"
    kc get nodes -o wide 2>/dev/null | sed 's/^/  /'
    node_ready || rc=1
  else
    echo "  apiserver               not ready"
    rc=1
  fi
  return "$rc"
}
