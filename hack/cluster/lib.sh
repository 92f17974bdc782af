# shellcheck shell=bash
# Shared settings and helpers for hack/cluster.sh. Sourced, never run.

# ---- settings (environment overrides in parentheses) --------------------------------------
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE="$ROOT/.cluster"                        # the one git-ignored folder the cluster owns
K8S_BIN="${K8S_BIN_DIR:-$ROOT/bin/k8s}"       # built by hack/k8s-binaries.sh
IMAGES_DIR="$ROOT/bin/images"                 # image tarballs (and their static binaries)
K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
KNP_VERSION="${KNP_VERSION:-v0.8.0}"         # sigs.k8s.io/kube-network-policies
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}" # github.com/coredns/coredns
PROVLIB_VERSION="${PROVLIB_VERSION:-v13.1.0}" # sigs.k8s.io/sig-storage-lib-external-provisioner
NODE_NAME="${TOOLGATE_NODE_NAME:-toolgate-node}"
APISERVER_PORT="${TOOLGATE_APISERVER_PORT:-6443}"
ETCD_CLIENT_PORT=2379
ETCD_PEER_PORT=2380
SERVICE_CIDR=10.0.0.0/24
SERVICE_IP=10.0.0.1                           # the `kubernetes` Service
DNS_SERVICE_IP=10.0.0.10                      # the `kube-dns` Service (CoreDNS on this machine)
CLUSTER_DOMAIN=cluster.local
POD_CIDR=10.244.0.0/24
BRIDGE=tgbr0
PAUSE_IMAGE=toolgate.local/pause:dev
SMOKE_IMAGE=toolgate.local/smoke:dev
# Processes (threads included) one Pod may hold: a fork bomb in a tool Pod stops there
# instead of exhausting the machine's pid space (kernel.pid_max).
POD_PIDS_LIMIT="${TOOLGATE_POD_PIDS_LIMIT:-256}"

PKI="$STATE/pki"
KUBECONFIGS="$STATE/kubeconfigs"
ADMIN_KUBECONFIG="$STATE/kubeconfig"
CONF="$STATE/config"
RUN="$STATE/run"
LOGS="$STATE/logs"
DATA="$STATE/data"
HOSTREC="$STATE/host"                         # what `up` changed outside .cluster/
CONTAINERD_SOCK="$RUN/containerd.sock"
API_URL="https://127.0.0.1:$APISERVER_PORT"

# Components in start order; `down` stops them in reverse.
COMPONENTS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kube-network-policies coredns provisioner kueue)
K8S_COMPONENTS=(etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy kube-network-policies coredns provisioner)
# nfacct: only for `down`, to delete the nfacct counters kube-proxy's rules create.
# nftables: the nft tool, to check and clean up the NetworkPolicy enforcer's tables.
# (gVisor's runsc is built from its Go module: hack/addons/gvisor.sh.)
APT_PACKAGES=(containerd runc containernetworking-plugins iptables busybox-static openssl nfacct nftables)
# The NetworkPolicy enforcer (hack/netpol): its NFQUEUE and its /metrics, /healthz port.
NETPOL_QUEUE=100
NETPOL_PORT=10330
# CoreDNS: DNS on the node address, port 53 (the kube-dns Service's endpoint); health and ready.
COREDNS_HEALTH_PORT=10332
COREDNS_READY_PORT=10333
# The volume provisioner: /metrics; one directory per volume under VOLUMES_DIR.
PROVISIONER_PORT=10331
PROVISIONER_NAME=toolgate.local/hostpath
STORAGE_CLASS=toolgate-local
# Kueue (hack/addons/kueue.sh, docs/kueue-local.md): /readyz, /metrics, its (unregistered)
# webhook server; its state (serving certificate, rendered Configuration) in KUEUE_STATE.
KUEUE_HEALTH_PORT=10334
KUEUE_METRICS_PORT=10335
KUEUE_WEBHOOK_PORT=10336
KUEUE_STATE="$STATE/kueue"

# ---- logging and timing ---------------------------------------------------------------------
_T0="${EPOCHREALTIME/./}"

now_us() { echo "${EPOCHREALTIME/./}"; }

# fmt_secs MICROSECONDS -> "12.3"
fmt_secs() { printf '%d.%d' "$(($1 / 1000000))" "$((($1 % 1000000) / 100000))"; }

# log MESSAGE: a progress line stamped with the time since the command started.
log() { printf '[%5ss] %s\n' "$(fmt_secs "$(($(now_us) - _T0))")" "$*"; }

die() {
  log "ERROR: $*" >&2
  exit 1
}

# ---- machine facts ----------------------------------------------------------------------------
# node_ip: the machine's own non-loopback IPv4 address (the default route's, else the first
# global one that is not our bridge). kubelet refuses loopback as --node-ip.
node_ip() {
  local dev ip
  if [ -n "${TOOLGATE_NODE_IP:-}" ]; then echo "$TOOLGATE_NODE_IP"; return; fi
  dev="$(ip -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')"
  if [ -n "$dev" ]; then
    ip="$(ip -4 -o addr show dev "$dev" scope global | awk '{split($4, a, "/"); print a[1]; exit}')"
  fi
  if [ -z "${ip:-}" ]; then
    ip="$(ip -4 -o addr show scope global | awk -v br="$BRIDGE" '$2 != br {split($4, a, "/"); print a[1]; exit}')"
  fi
  [ -n "${ip:-}" ] || die "no non-loopback IPv4 address found (set TOOLGATE_NODE_IP)"
  echo "$ip"
}

# ---- processes --------------------------------------------------------------------------------
# component_bin NAME: the binary a component runs (used to check a pid file is still ours),
# with symlinks resolved as /proc/PID/exe shows it (bin/ may be a symlink, as in a worktree).
component_bin() {
  case "$1" in
    containerd) echo /usr/bin/containerd ;;
    jaeger) readlink -f "$ROOT/bin/jaeger" 2>/dev/null || echo "$ROOT/bin/jaeger" ;; # hack/jaeger/jaeger.sh
    kueue) readlink -f "$ROOT/bin/kueue/kueue-manager" 2>/dev/null || echo "$ROOT/bin/kueue/kueue-manager" ;; # hack/addons/kueue.sh
    *) readlink -f "$K8S_BIN/$1" 2>/dev/null || echo "$K8S_BIN/$1" ;;
  esac
}

# component_pid NAME: prints the pid if the component runs (pid file + same binary), else fails.
component_pid() {
  local pidfile="$RUN/$1.pid" pid exe
  [ -f "$pidfile" ] || return 1
  pid="$(cat "$pidfile")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || return 1
  [ "${exe% (deleted)}" = "$(component_bin "$1")" ] || return 1
  echo "$pid"
}

# start_component NAME ARGS...: start the component's binary in its own session (so neither a
# `timeout` nor a terminal's process group takes it down), with a pid file and a log file.
start_component() {
  local name="$1"
  shift
  mkdir -p "$RUN" "$LOGS"
  rm -f "$RUN/$name.pid"
  # The inner shell writes its own pid (setsid may fork), then becomes the binary.
  # shellcheck disable=SC2016 # expanded by the inner shell
  # A restart (LOG_APPEND=1) keeps the log of the run before; `up` starts it afresh.
  [ "${LOG_APPEND:-0}" = 1 ] || : >"$LOGS/$name.log"
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$RUN/$name.pid" "$(component_bin "$name")" "$@" \
    >>"$LOGS/$name.log" 2>&1 </dev/null &
  # Return only once the inner shell has exec'd the binary: until then /proc/PID/exe is bash,
  # and component_pid (which checks the executable) would take the component for dead.
  local _
  for _ in $(seq 250); do
    component_pid "$name" >/dev/null && return 0
    sleep 0.02
  done
  log_tail "$name"
  die "$name did not start"
}

# alive PID: the process exists and has not exited. Our components are orphans once `up` has
# returned, and the machine's init reaps orphans only every so often: a zombie counts as gone.
alive() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [ "${stat:0:1}" != Z ]
}

# stop_pid PID NAME [GRACE_SECONDS]: SIGTERM, then SIGKILL after the grace period.
stop_pid() {
  local pid="$1" name="$2" grace="${3:-10}" _
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq $((grace * 20))); do
    alive "$pid" || return 0
    sleep 0.05
  done
  log "$name (pid $pid) ignored SIGTERM for ${grace}s: SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    alive "$pid" || return 0
    sleep 0.05
  done
}

stop_component() {
  local name="$1" pid
  if pid="$(component_pid "$name")"; then
    stop_pid "$pid" "$name" "${2:-10}"
    log "stopped $name (pid $pid)"
  fi
  rm -f "$RUN/$name.pid"
}

# timed COMMAND...: run it; log how long it took when that was more than a second.
timed() {
  local start
  start="$(now_us)"
  "$@"
  if [ $(($(now_us) - start)) -gt 1000000 ]; then log "$* took $(fmt_secs "$(($(now_us) - start))")s"; fi
}

# log_tail NAME: the last lines of a component's log, for failure reports.
log_tail() {
  local f="$LOGS/$1.log"
  [ -f "$f" ] || return 0
  echo "---- last 30 lines of $f ----" >&2
  tail -n 30 "$f" >&2
  echo "----" >&2
}

# wait_for COMPONENT DESCRIPTION TIMEOUT_SECONDS CHECK...: poll CHECK every 0.1 s; log the
# time it took. Fails (with the component's log tail) on timeout or when the component dies.
wait_for() {
  local comp="$1" what="$2" timeout="$3" start deadline
  shift 3
  start="$(now_us)"
  deadline=$((start + timeout * 1000000))
  until "$@" >/dev/null 2>&1; do
    if [ "$comp" != - ] && ! component_pid "$comp" >/dev/null; then
      log_tail "$comp"
      die "$comp exited while waiting for: $what"
    fi
    if [ "$(now_us)" -gt "$deadline" ]; then
      [ "$comp" = - ] || log_tail "$comp"
      die "timed out after ${timeout}s waiting for: $what"
    fi
    sleep 0.1
  done
  log "$what (+$(fmt_secs "$(($(now_us) - start))")s)"
}

# kc ARGS...: kubectl as the cluster admin.
kc() { "$K8S_BIN/kubectl" --kubeconfig "$ADMIN_KUBECONFIG" --request-timeout=10s "$@"; }

# ctr_k8s ARGS...: ctr against our containerd, in the CRI's namespace.
ctr_k8s() { ctr -a "$CONTAINERD_SOCK" -n k8s.io "$@"; }
