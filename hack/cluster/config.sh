# shellcheck shell=bash
# Configuration files of containerd, CNI and the kubelet, and the record of what `up` changes
# on the host outside .cluster/ (so `down` can undo exactly that).

write_containerd_config() {
  mkdir -p "$CONF/cni" "$DATA/containerd" "$RUN"
  cat >"$CONF/containerd.toml" <<EOF
version = 2
root = "$DATA/containerd/root"
state = "$DATA/containerd/state"
# Unused snapshotters only log errors at start.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$DATA/containerd/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Required here: without CAP_SYS_RESOURCE runc fails with
  # "can't get final child's PID from pipe: EOF" when asked to lower oom_score_adj.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$DATA/containerd/runc"
    # gVisor (RuntimeClass gvisor): containerd's runc shim driving bin/gvisor/runsc (built from
    # gVisor's Go module, hack/addons/gvisor.sh) through hack/cluster/runsc-runtime.sh, which
    # says why it is needed. Platform systrap, runsc's default (docs/local-cluster-limits.md,
    # "gVisor").
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc.options]
        BinaryName = "$ROOT/hack/cluster/runsc-runtime.sh"
        SystemdCgroup = false
        Root = "$DATA/containerd/runsc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CONF/cni"
    max_conf_num = 1
EOF
}

# write_cni_config: one bridge network. No masquerade: Pods only talk to this machine.
write_cni_config() {
  mkdir -p "$CONF/cni" "$DATA/cni"
  cat >"$CONF/cni/10-toolgate.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "toolgate",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$DATA/cni/ipam"
      }
    }
  ]
}
EOF
}

# write_kubelet_config NODE_IP
write_kubelet_config() {
  mkdir -p "$DATA/kubelet" "$LOGS/pods"
  cat >"$CONF/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 here: 1.37 refuses it unless told not to fail.
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
podLogsDir: $LOGS/pods
address: $1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
clusterDomain: $CLUSTER_DOMAIN
# CoreDNS behind the kube-dns Service. No host resolver in Pods (resolvConf ""): CoreDNS answers
# the cluster's names and the local hosts file, and forwards nothing off the machine.
clusterDNS: [$DNS_SERVICE_IP]
resolvConf: ""
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
# Only holders of a certificate from our CA (the apiserver) reach the kubelet API.
authorization: {mode: AlwaysAllow}
# A test machine: evict only when really out of space, never garbage-collect images
# (they cannot be pulled back).
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
makeIPTablesUtilChains: false
# Every Pod's cgroup gets pids.max: a fork bomb fails its forks, the node keeps its pids.
podPidsLimit: $POD_PIDS_LIMIT
serializeImagePulls: false
EOF
}

write_configs() {
  write_containerd_config
  write_cni_config
  write_kubelet_config "$1"
}

# ---- host changes -------------------------------------------------------------------------------
# Paths that kubelet, containerd and the CNI plugins create outside any configured folder.
# (/run/mount: util-linux's utab, written when the kubelet makes its root dir a shared mount;
# /etc/kueue: Kueue's metrics certificate, at a path fixed in its code, hack/addons/kueue.sh.)
OUTSIDE_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd
  /run/netns /run/mount /opt/containerd /etc/kubernetes /etc/kueue)
# Kernel settings that the kubelet (kernel tunables), the bridge plugin (ip_forward) and
# kube-proxy may change; `down` puts the recorded values back, in this order (turning
# ip_forward on also turns all.accept_redirects off, and turning it off resets every
# interface's forwarding).
SYSCTLS=(net.ipv4.ip_forward net.ipv4.conf.all.accept_redirects net.ipv4.conf.all.route_localnet
  net.bridge.bridge-nf-call-iptables vm.overcommit_memory vm.panic_on_oom kernel.panic
  kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

# record_host_state: before anything starts, note which outside paths do not exist yet (those
# `down` removes whole) and the kernel settings. Never overwrites an earlier record: after a
# crash the first record is the one that describes the machine as it was.
record_host_state() {
  local p s
  mkdir -p "$HOSTREC"
  touch "$HOSTREC/created-paths"
  for p in "${OUTSIDE_PATHS[@]}"; do
    [ -e "$p" ] || grep -qxF "$p" "$HOSTREC/created-paths" || echo "$p" >>"$HOSTREC/created-paths"
  done
  if [ ! -f "$HOSTREC/nft-tables" ]; then
    # iptables-nft creates its tables on first use; kube-proxy creates nfacct counters.
    { nft list tables 2>/dev/null || true; } >"$HOSTREC/nft-tables"
    { nfacct list 2>/dev/null || true; } | sed -nE 's/.* = ([^;]+);$/\1/p' >"$HOSTREC/nfacct"
  fi
  if [ ! -f "$HOSTREC/sysctl" ]; then
    for s in "${SYSCTLS[@]}"; do
      if [ -e "/proc/sys/${s//.//}" ]; then echo "$s=$(cat "/proc/sys/${s//.//}")"; fi
    done >"$HOSTREC/sysctl.tmp"
    mv "$HOSTREC/sysctl.tmp" "$HOSTREC/sysctl"
  fi
}

restore_sysctls() {
  local key val
  [ -f "$HOSTREC/sysctl" ] || return 0
  while IFS='=' read -r key val; do
    [ "$(cat "/proc/sys/${key//.//}" 2>/dev/null)" = "$val" ] && continue
    if echo "$val" >"/proc/sys/${key//.//}" 2>/dev/null; then log "restored $key=$val"; fi
  done <"$HOSTREC/sysctl"
  rm -f "$HOSTREC/sysctl"
}

# ---- egress guard -------------------------------------------------------------------------------
# Pods may reach this machine (its addresses, the apiserver through the `kubernetes` Service)
# and each other, nothing else: forwarded traffic between the Pod network and any other
# interface is dropped. The bridge plugin turns ip_forward on, so without this a Pod's packets
# could be routed off the machine. The chain hangs off mangle/FORWARD, which the kernel runs
# before filter/FORWARD, so no ACCEPT of kube-proxy's can come first.
EGRESS_CHAIN=TOOLGATE-EGRESS

ensure_egress_guard() {
  local ipt=(iptables -w -t mangle)
  "${ipt[@]}" -N "$EGRESS_CHAIN" 2>/dev/null || "${ipt[@]}" -F "$EGRESS_CHAIN"
  "${ipt[@]}" -A "$EGRESS_CHAIN" -s "$POD_CIDR" ! -o "$BRIDGE" -j DROP
  "${ipt[@]}" -A "$EGRESS_CHAIN" -d "$POD_CIDR" ! -i "$BRIDGE" -j DROP
  "${ipt[@]}" -C FORWARD -j "$EGRESS_CHAIN" 2>/dev/null || "${ipt[@]}" -I FORWARD 1 -j "$EGRESS_CHAIN"
}
