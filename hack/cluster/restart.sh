# shellcheck shell=bash
# `restart COMPONENT [--kill]`: stop one component and start it again with the flags `up`
# gave it, then wait until it is ready again. For fault injection (the real-cluster chaos
# e2e restarts kube-apiserver under load) and for picking up a rebuilt binary.

# restart_ready COMPONENT: the readiness check `up` waits for after starting it.
restart_ready() {
  case "$1" in
    containerd) wait_for containerd "containerd serving" 20 timeout 2 ctr -a "$CONTAINERD_SOCK" version ;;
    etcd) wait_for etcd "etcd healthy" 30 etcd_healthy ;;
    kube-apiserver) wait_for kube-apiserver "kube-apiserver ready" 60 apiserver_ready ;;
    kube-controller-manager) wait_for kube-controller-manager "kube-controller-manager healthy" 30 https_healthy 10257 ;;
    kube-scheduler) wait_for kube-scheduler "kube-scheduler healthy" 30 https_healthy 10259 ;;
    kubelet) wait_for kubelet "node $NODE_NAME Ready" 60 node_ready ;;
    kube-proxy) wait_for kube-proxy "kube-proxy healthy" 30 http_healthy 10256 ;;
    kube-network-policies)
      wait_for kube-network-policies "NetworkPolicy enforcer healthy" 30 http_healthy "$NETPOL_PORT"
      wait_for kube-network-policies "NetworkPolicy enforcer bound to its queue, guard in place" 30 netpol_enforcing
      ;;
    coredns) wait_for coredns "CoreDNS ready" 30 dns_ready ;;
    provisioner) wait_for provisioner "volume provisioner serving" 30 provisioner_healthy ;;
    kueue) wait_for kueue "Kueue ready (its Job controller running)" 60 kueue_ready ;;
  esac
}

# restart_start COMPONENT NODE_IP: the start function `up` uses for it.
restart_start() {
  case "$1" in
    containerd) start_containerd ;;
    etcd) start_etcd ;;
    kube-apiserver) start_apiserver "$2" ;;
    kube-controller-manager) start_controller_manager ;;
    kube-scheduler) start_scheduler ;;
    kubelet) start_kubelet "$2" ;;
    kube-proxy) start_kube_proxy ;;
    kube-network-policies) start_netpol ;;
    coredns) start_coredns "$2" ;;
    provisioner) start_provisioner ;;
    kueue) start_kueue ;;
  esac
}

# cmd_restart COMPONENT [--kill]: SIGTERM (10 s grace, then SIGKILL) or, with --kill, SIGKILL
# at once; then start it again and wait for it. Prints how long it was down.
cmd_restart() {
  local name="${1:-}" mode="${2:-}" c known= pid ip start
  for c in "${COMPONENTS[@]}"; do [ "$c" = "$name" ] && known=yes; done
  [ -n "$known" ] || die "restart: unknown component '$name' (one of: ${COMPONENTS[*]})"
  [ -z "$mode" ] || [ "$mode" = --kill ] || die "restart: unknown option '$mode' (--kill)"
  [ -f "$PKI/node-ip" ] && [ -d "$CONF" ] || die "restart: the cluster is not up (hack/cluster.sh up)"
  ip="$(cat "$PKI/node-ip")"
  start="$(now_us)"
  if pid="$(component_pid "$name")"; then
    if [ "$mode" = --kill ]; then
      kill -KILL "$pid" 2>/dev/null || true
      local _
      for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
      log "killed $name (pid $pid)"
    else
      stop_pid "$pid" "$name" 10
      log "stopped $name (pid $pid)"
    fi
  else
    log "$name was not running"
  fi
  rm -f "$RUN/$name.pid"
  LOG_APPEND=1 restart_start "$name" "$ip"
  restart_ready "$name"
  log "restarted $name: down for $(fmt_secs "$(($(now_us) - start))")s (stop to ready)"
}
