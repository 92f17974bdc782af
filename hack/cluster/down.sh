# shellcheck shell=bash
# `down`: stop what `up` started and remove what it created, inside and outside .cluster/.
# Idempotent: every step tolerates "already gone", so it also cleans up after a crash.

# cgroup_dirs: every kubepods cgroup folder, deepest first (cgroup v1: one tree per hierarchy).
cgroup_dirs() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [ -L "${h%/}" ] && continue # cpu -> cpu,cpuacct style aliases
    if [ -d "${h}kubepods" ]; then find "${h}kubepods" -depth -type d; fi
  done
}

# kill_pod_processes: SIGKILL every process in the kubepods cgroups (containers and pause
# processes), whatever state containerd and the kubelet are in.
kill_pod_processes() {
  local pids pid _
  for _ in $(seq 50); do
    pids=()
    for pid in $(pod_pids); do
      if alive "$pid"; then pids+=("$pid"); fi # zombies are dead already, their shim reaps them
    done
    [ ${#pids[@]} -eq 0 ] && return 0
    kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 0.1
  done
  log "WARNING: Pod processes still alive: ${pids[*]}"
}

# pod_pids: the pids in any kubepods cgroup.
pod_pids() {
  local dirs
  mapfile -t dirs < <(cgroup_dirs)
  [ ${#dirs[@]} -gt 0 ] || return 0
  cat "${dirs[@]/%//cgroup.procs}" 2>/dev/null | sort -un || true
}

# stray_components: components of ours whose pid file is gone (e.g. .cluster/run deleted by
# hand): our binary, with a command line that points into our folder.
stray_components() {
  local f pid exe c
  for f in $(grep -lzF "$STATE/" /proc/[0-9]*/cmdline 2>/dev/null); do
    pid="${f#/proc/}" pid="${pid%/cmdline}"
    exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || continue
    for c in "${COMPONENTS[@]}"; do
      [ "${exe% (deleted)}" = "$(component_bin "$c")" ] || continue
      [ "$(cat "$RUN/$c.pid" 2>/dev/null)" = "$pid" ] && continue # has its pid file: not a stray
      echo "$pid $c"
    done
  done
}

stop_strays() {
  local pid name
  stray_components | while read -r pid name; do
    stop_pid "$pid" "$name" 10
    log "stopped stray $name (pid $pid)"
  done
}

# our_shims: pids of containerd shims started by our containerd (matched by its socket).
our_shims() {
  local f pid
  for f in $(grep -lxzF "$CONTAINERD_SOCK" /proc/[0-9]*/cmdline 2>/dev/null); do
    pid="${f#/proc/}" pid="${pid%/cmdline}"
    if [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */containerd-shim* ]]; then echo "$pid"; fi
  done
}

stop_shims() {
  local pid
  for pid in $(our_shims); do
    stop_pid "$pid" containerd-shim 2
  done
}

# unmount_all: every mount under our folder and the mounts our runtime made outside it
# (network namespaces, shim state), deepest first.
our_mounts() {
  local mp
  awk '{print $5}' /proc/self/mountinfo |
    while read -r mp; do printf '%b\n' "$mp"; done | # mountinfo escapes spaces as \040
    awk -v state="$STATE/" 'index($0, state) == 1 || index($0, "/run/netns/cni-") == 1 ||
      index($0, "/run/containerd/") == 1 || index($0, "/var/lib/kubelet/") == 1 {print length($0), $0}' |
    sort -rn | cut -d' ' -f2-
}

unmount_all() {
  local mp
  while read -r mp; do
    umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || log "WARNING: cannot unmount $mp"
  done < <(our_mounts)
}

remove_cgroups() {
  local d i
  for i in $(seq 20); do
    cgroup_dirs | while read -r d; do rmdir "$d" 2>/dev/null || true; done
    [ -z "$(cgroup_dirs)" ] && return 0
    sleep 0.1
  done
  log "WARNING: cgroups left: $(cgroup_dirs | tr '\n' ' ')"
}

# iptables_cleanup: kube-proxy's own cleanup, then every KUBE-* chain (kubelet's canaries
# included) and our egress guard, in both IP families.
iptables_cleanup() {
  if [ -x "$K8S_BIN/kube-proxy" ]; then
    "$K8S_BIN/kube-proxy" --cleanup >"$LOGS/kube-proxy-cleanup.log" 2>&1 || true
  fi
  local cmd table
  for cmd in iptables ip6tables; do
    command -v "$cmd" >/dev/null || continue
    for table in filter nat mangle raw; do
      # One atomic iptables-restore per table; rule by rule if that is refused.
      remove_our_chains "$cmd" "$table" restore 2>/dev/null || remove_our_chains "$cmd" "$table" each
    done
  done
  nft_cleanup
  nfacct_cleanup
}

# remove_our_chains CMD TABLE restore|each: delete the rules of built-in chains that jump to
# KUBE-*/TOOLGATE-* chains, then flush and delete those chains.
remove_our_chains() {
  local cmd="$1" table="$2" save chains jumps line
  save="$("$cmd-save" -t "$table" 2>/dev/null)" || return 0
  chains="$(sed -nE 's/^:((KUBE|TOOLGATE)-[^ ]+) .*/\1/p' <<<"$save")"
  [ -n "$chains" ] || return 0
  jumps="$(grep -E '^-A [A-Z]+ .*-j (KUBE|TOOLGATE)-' <<<"$save" | grep -vE '^-A (KUBE|TOOLGATE)-' || true)"
  if [ "$3" = restore ]; then
    {
      echo "*$table"
      if [ -n "$jumps" ]; then sed 's/^-A /-D /' <<<"$jumps"; fi
      sed 's/^/-F /' <<<"$chains"
      sed 's/^/-X /' <<<"$chains"
      echo COMMIT
    } | "$cmd-restore" -w --noflush
    return
  fi
  while read -r line; do
    # shellcheck disable=SC2086 # the rule is a list of words (comments are quoted: best effort)
    [ -n "$line" ] && { "$cmd" -w -t "$table" -D ${line#-A } 2>/dev/null || true; }
  done <<<"$jumps"
  for line in $chains; do "$cmd" -w -t "$table" -F "$line" 2>/dev/null || true; done
  for line in $chains; do "$cmd" -w -t "$table" -X "$line" 2>/dev/null || true; done
}

# nft_cleanup: kube-proxy's nftables tables (should a run have used that mode), the
# NetworkPolicy enforcer's (should its rules ever load), and the tables
# iptables-nft created for us, if they did not exist before `up` and no rule is left in them.
nft_cleanup() {
  command -v nft >/dev/null || return 0
  local fam name
  while read -r _ fam name; do
    case "$name" in kube-proxy | kube-network-policies)
      nft delete table "$fam" "$name" 2>/dev/null || true
      continue
      ;;
    esac
    [ -f "$HOSTREC/nft-tables" ] || continue
    grep -qxF "table $fam $name" "$HOSTREC/nft-tables" && continue
    nft_table_empty "$fam" "$name" && { nft delete table "$fam" "$name" 2>/dev/null || true; }
  done < <(nft list tables 2>/dev/null || true)
  rm -f "$HOSTREC/nft-tables"
}

# nft_table_empty FAMILY NAME: the table holds chains without any rule (or set, map...).
nft_table_empty() {
  nft list table "$1" "$2" 2>/dev/null | awk '
    /^table / || /^[[:space:]]*chain .*\{$/ || /^[[:space:]]*type .* hook / || /^[[:space:]]*}$/ || /^[[:space:]]*$/ {next}
    {found = 1} END {exit found}'
}

# nfacct_cleanup: the nfacct counters kube-proxy created (named in its iptables rules).
nfacct_cleanup() {
  command -v nfacct >/dev/null && [ -f "$HOSTREC/nfacct" ] || return 0
  local name
  while read -r name; do
    grep -qxF "$name" "$HOSTREC/nfacct" && continue
    nfacct delete "$name" >/dev/null 2>&1 || true
  done < <(nfacct list 2>/dev/null | sed -nE 's/.* = ([^;]+);$/\1/p')
  rm -f "$HOSTREC/nfacct"
}

# remove_outside_paths: paths that did not exist before `up` go whole; in paths that did,
# only our entries go (network namespaces, CNI results of our network, log symlinks into
# our folder).
remove_outside_paths() {
  local p f
  rm -f /run/netns/cni-*
  rm -rf /var/lib/cni/results/toolgate-* /var/lib/cni/networks/toolgate
  for f in /var/log/containers/*.log; do
    if [ -L "$f" ] && [[ "$(readlink "$f")" == "$STATE/"* ]]; then rm -f "$f"; fi
  done
  if [ -f "$HOSTREC/created-paths" ]; then
    while read -r p; do
      if [ -n "$p" ]; then rm -rf "$p"; fi
    done <"$HOSTREC/created-paths"
    rm -f "$HOSTREC/created-paths"
  fi
}

remove_bridge() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || return 0
  ip link delete "$BRIDGE"
  log "removed interface $BRIDGE"
}

# cmd_down [--purge]: --purge also removes PKI, kubeconfigs and logs (all of .cluster/).
cmd_down() {
  local i
  mkdir -p "$LOGS"
  # Reverse start order (kube-proxy and the kubelet first: the kubelet would restart what we
  # stop); containerd goes after the Pod processes.
  # The API server drains its clients' requests first (the Pods' watches, which die with the
  # Pods moments later) and would wait its full grace for them; nothing it holds is kept, so
  # it gets 2 s rather than 10.
  local grace
  for ((i = ${#COMPONENTS[@]} - 1; i >= 1; i--)); do
    grace=10
    [ "${COMPONENTS[i]}" != kube-apiserver ] || grace=2
    stop_component "${COMPONENTS[i]}" "$grace"
  done
  stop_kueue_certs # Kueue's metrics certificate in /etc/kueue (and a manager `kueue.sh start` started)
  stop_component jaeger # hack/jaeger/jaeger.sh start (make up TRACING=1), if it runs
  "$ROOT/hack/jaeger/address.sh" down # the tools' collector address (make up TRACING=1)
  local step
  for step in stop_strays kill_pod_processes "stop_component containerd" stop_shims \
    iptables_cleanup unmount_all remove_cgroups remove_bridge remove_outside_paths restore_sysctls; do
    timed $step
  done
  rm -rf "$DATA" "$RUN" "$CONF" "$STATE/cluster.env"
  rmdir "$HOSTREC" 2>/dev/null || true
  if [ "${1:-}" = --purge ]; then
    rm -rf "$STATE"
    log "removed $STATE"
  fi
  log "cluster down"
}
