#!/usr/bin/env bash
# Kueue (sigs.k8s.io/kueue) for the local cluster: its controller manager built from Go modules,
# its manifests rendered from the module zip (no download but the Go module proxy), and the
# manager run as a host process with a kubeconfig, like CoreDNS and the provisioner.
#
#   hack/addons/kueue.sh build       build bin/kueue/kueue-manager unless present for this version
#   hack/addons/kueue.sh manifests   render bin/kueue/manifests/: CRDs, namespace, RBAC, config
#   hack/addons/kueue.sh start       build, render, apply, start the manager (KUEUE_ADMIN_KUBECONFIG,
#                                    KUEUE_KUBECONFIG: the local cluster's by default)
#   hack/addons/kueue.sh prepare     build, render, apply CRDs and RBAC, issue the certificates,
#                                    write $KUEUE_STATE/config.yaml: all of start but the launch
#                                    (make up launches the manager itself, hack/cluster/addons.sh)
#   hack/addons/kueue.sh stop        stop the one start started; remove /etc/kueue/metrics/certs
#   hack/addons/kueue.sh status      exit 0 when the manager reports ready (with KUEUE_LOG: and
#                                    its Job controller's workers run)
#   hack/addons/kueue.sh queues NS...  ResourceFlavor default, Cohort toolgate sized to the node,
#                                    ClusterQueue toolgate borrowing it, LocalQueue toolgate in each
#                                    NS (hack/addons/kueue/*.yaml.tmpl)
#   hack/addons/kueue.sh group NAME NS [N]  a requester group: ClusterQueue NAME in Cohort toolgate
#                                    (borrowing at most 1/N of its quota), LocalQueue NAME in NS
#
# The version comes from hack/tools/kueue/go.mod (a module of its own, `go get -tool`, so Kueue's
# dependencies, on an older k8s.io set, never enter toolgate's go.mod). docs/kueue-local.md says
# why the manager runs without webhooks, how the queue is sized and which fair sharing it uses.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
mod="$root/hack/tools/kueue"
out="${KUEUE_DIR:-$root/bin/kueue}"
bin="$out/kueue-manager"
state="${KUEUE_STATE:-$root/.cluster/kueue}"  # certs, pid, log: the cluster's git-ignored folder
manifests="$out/manifests"
# Who applies the manifests (cluster admin) and who the manager is (user system:kueue, bound to
# Kueue's ClusterRole by the rendered RBAC); the e2e cluster's kubeconfigs by default.
admin_kubeconfig="${KUEUE_ADMIN_KUBECONFIG:-$root/.cluster/kubeconfig}"
kueue_kubeconfig="${KUEUE_KUBECONFIG:-$root/.cluster/kubeconfigs/kueue.kubeconfig}"
kubectl="${KUBECTL:-$root/bin/k8s/kubectl}"
# Loopback ports next to the other add-ons' (hack/cluster/lib.sh: 10330-10333).
health_port="${KUEUE_HEALTH_PORT:-10334}"
metrics_port="${KUEUE_METRICS_PORT:-10335}"
webhook_port="${KUEUE_WEBHOOK_PORT:-10336}"
# Kueue reads its metrics serving certificate from this fixed path when it does not manage
# its own certificates (cmd/kueue/main.go); the one path this add-on writes outside the repo.
metrics_cert_dir=/etc/kueue/metrics/certs

version() { # the module version pinned in the tools module, plus its go.sum digest
  local v
  v="$(cd "$mod" && go list -m -f '{{.Version}}' sigs.k8s.io/kueue)"
  echo "$v+$(sha256sum "$mod/go.sum" | cut -c1-12)"
}

build() {
  local ver v start=$SECONDS
  ver="$(version)"
  if [ -x "$bin" ] && [ "$(cat "$bin.version" 2>/dev/null)" = "$ver" ]; then
    echo "kueue: $ver present"
    return
  fi
  echo "kueue: building $ver (first time: minutes)"
  mkdir -p "$out"
  v="${ver%%+*}"
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$v -X sigs.k8s.io/kueue/pkg/version.GitCommit=module-$v" \
    -o "$bin.tmp" sigs.k8s.io/kueue/cmd/kueue)
  mv -f "$bin.tmp" "$bin"
  echo "$ver" >"$bin.version"
  echo "kueue: built in $((SECONDS - start))s"
}

# module_dir: Kueue's module in the module cache (CRDs and RBAC come from its zip).
module_dir() { (cd "$mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/kueue); }

# render_manifests: bin/kueue/manifests/{crds,rbac,config}.yaml for this version.
#   crds.yaml    config/components/crd/bases as they are (no conversion webhook: only v1beta2
#                is used, and it is the storage version)
#   rbac.yaml    namespace kueue-system; Kueue's manager ClusterRole (role.yaml, named as its
#                kustomization names it), metrics-auth role and the Role for Secrets in
#                kueue-system (MultiKueue's informer: without it no controller starts), bound to
#                user system:kueue (the host process) and to the ServiceAccount an in-cluster
#                install would use
#   config.yaml  Kueue Configuration: batch/job only, Jobs without a queue label left alone, no
#                leader election, no internal cert management, loopback ports, fair sharing
#                between a Cohort's ClusterQueues; $STATE is replaced at start
render_manifests() {
  local dir ver
  ver="$(version)+$(sha256sum "$root/hack/addons/kueue.sh" | cut -c1-12)" # this script renders them
  if [ "$(cat "$manifests/.version" 2>/dev/null)" = "$ver" ]; then return; fi
  dir="$(module_dir)"
  mkdir -p "$manifests"
  local f
  for f in "$dir"/config/components/crd/bases/*.yaml; do
    printf -- '---\n'
    grep -v '^---$' "$f"
  done >"$manifests/crds.yaml"
  {
    cat <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: kueue-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: kueue-controller-manager, namespace: kueue-system}
YAML
    printf -- '---\n'
    grep -v '^---$' "$dir/config/components/rbac/role.yaml" | sed 's/^  name: manager-role$/  name: kueue-manager-role/'
    printf -- '---\n'
    grep -v '^---$' "$dir/config/components/rbac/metrics_auth_role.yaml" | sed 's/^  name: metrics-auth-role$/  name: kueue-metrics-auth-role/'
    printf -- '---\n'
    grep -v '^---$' "$dir/config/components/rbac/manager_secrets_role.yaml" |
      sed -e 's/^  name: manager-secrets-role$/  name: kueue-manager-secrets-role/' -e 's/^  namespace: system$/  namespace: kueue-system/'
    cat <<'YAML'
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: kueue-manager-secrets-rolebinding, namespace: kueue-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: kueue-manager-secrets-role}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kueue"}
- {kind: ServiceAccount, name: kueue-controller-manager, namespace: kueue-system}
YAML
    local role
    for role in kueue-manager-role kueue-metrics-auth-role; do
      cat <<YAML
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $role-binding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $role}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kueue"}
- {kind: ServiceAccount, name: kueue-controller-manager, namespace: kueue-system}
YAML
    done
  } >"$manifests/rbac.yaml"
  cat >"$manifests/config.yaml" <<YAML
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health:
  healthProbeBindAddress: 127.0.0.1:$health_port
metrics:
  bindAddress: 127.0.0.1:$metrics_port
# Served on loopback, registered nowhere (docs/kueue-local.md, "Webhooks"): toolgate creates
# its Jobs suspended and labelled, which is all the Job webhook would add.
webhook:
  host: 127.0.0.1
  port: $webhook_port
  certDir: \$STATE/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
integrations:
  frameworks: ["batch/job"]
featureGates:
  VisibilityOnDemand: false
clientConnection:
  qps: 50
  burst: 100
# Fair sharing between the ClusterQueues of a Cohort (docs/kueue-local.md, "Fair sharing"): the
# one with the lowest dominant resource share is admitted from first (of the moment: requester
# groups get a borrowing limit, see group below). The strategies matter
# only for preemption, which the queues turn off. Not admission fair sharing (ordering by
# LocalQueue usage): in v0.17.0 it rewrites a LocalQueue's status ~50 times a second once a
# Workload was admitted (measured; the docs say why).
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
YAML
  echo "$ver" >"$manifests/.version"
  echo "kueue: manifests for $ver in $manifests"
}

# ensure_certs: the webhook server's and metrics server's serving certificate (Kueue will not
# start without them even when no webhook is registered), signed by the local cluster's CA
# when there is one ($KUEUE_CA_DIR/ca.{crt,key}), else by a CA of the add-on's own.
ensure_certs() {
  local certs="$state/certs" ca_dir="${KUEUE_CA_DIR:-$root/.cluster/pki}"
  mkdir -p "$certs"
  if [ ! -f "$certs/tls.crt" ]; then
    if [ ! -f "$ca_dir/ca.crt" ] || [ ! -f "$ca_dir/ca.key" ]; then
      ca_dir="$certs"
      openssl ecparam -name prime256v1 -genkey -noout -out "$ca_dir/ca.key" 2>/dev/null
      openssl req -x509 -new -key "$ca_dir/ca.key" -subj "/CN=toolgate-local-kueue-ca" -days 3650 \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$ca_dir/ca.crt"
    fi
    openssl ecparam -name prime256v1 -genkey -noout -out "$certs/tls.key" 2>/dev/null
    chmod 600 "$certs/tls.key"
    openssl req -new -key "$certs/tls.key" -subj "/CN=kueue-webhook-service.kueue-system.svc" -out "$certs/tls.csr"
    openssl x509 -req -in "$certs/tls.csr" -CA "$ca_dir/ca.crt" -CAkey "$ca_dir/ca.key" \
      -set_serial "0x$(openssl rand -hex 16)" -days 825 -extfile <(printf '%s\n' \
        "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
        "extendedKeyUsage=serverAuth" \
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kueue-webhook-service.kueue-system.svc") \
      -out "$certs/tls.crt" 2>/dev/null
    rm -f "$certs/tls.csr"
    [ -f "$certs/ca.crt" ] || cp "$ca_dir/ca.crt" "$certs/ca.crt"
  fi
  mkdir -p "$metrics_cert_dir"
  cmp -s "$certs/tls.crt" "$metrics_cert_dir/tls.crt" || cp "$certs/tls.crt" "$metrics_cert_dir/tls.crt"
  cmp -s "$certs/tls.key" "$metrics_cert_dir/tls.key" || install -m 600 "$certs/tls.key" "$metrics_cert_dir/tls.key"
}

ready() { curl -fsS -m 2 "http://127.0.0.1:$health_port/readyz" >/dev/null 2>&1; }

# secs_since T0: seconds (ms precision) since T0, a ${EPOCHREALTIME/./} reading.
secs_since() {
  local ms=$(((${EPOCHREALTIME/./} - $1) / 1000))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

pid_alive() { [ -f "$state/kueue.pid" ] && kill -0 "$(cat "$state/kueue.pid")" 2>/dev/null; }

# prepare: build, render, apply CRDs and RBAC as the admin and wait until they are
# Established, issue the certificates, write $KUEUE_STATE/config.yaml. Prints its seconds.
prepare() {
  local t0
  [ -f "$admin_kubeconfig" ] || { echo "kueue: no admin kubeconfig at $admin_kubeconfig" >&2; exit 1; }
  build
  render_manifests
  ensure_certs
  t0="${EPOCHREALTIME/./}"
  "$kubectl" --kubeconfig "$admin_kubeconfig" apply --server-side --force-conflicts \
    -f "$manifests/crds.yaml" -f "$manifests/rbac.yaml" >/dev/null
  "$kubectl" --kubeconfig "$admin_kubeconfig" wait --for condition=Established --timeout=30s \
    -f "$manifests/crds.yaml" >/dev/null
  echo "kueue: CRDs and RBAC applied and established in $(secs_since "$t0")s"
  sed "s|\\\$STATE|$state|" "$manifests/config.yaml" >"$state/config.yaml"
}

# start: prepare, then run the manager as system:kueue in its own session (pid and log in
# $KUEUE_STATE) and wait for /readyz and its Job controller's workers. Prints the seconds each
# step took. (The smoke test's way; make up starts it as a cluster component instead.)
start() {
  local t0
  [ -f "$kueue_kubeconfig" ] || { echo "kueue: no kubeconfig for system:kueue at $kueue_kubeconfig" >&2; exit 1; }
  if pid_alive && ready; then echo "kueue: already running"; return; fi
  prepare
  t0="${EPOCHREALTIME/./}"
  KUBECONFIG="$kueue_kubeconfig" setsid "$bin" --config "$state/config.yaml" --zap-log-level=info \
    >"$state/kueue.log" 2>&1 </dev/null &
  echo $! >"$state/kueue.pid"
  for _ in $(seq 1 300); do
    # /readyz only checks the webhook server; the Job controller starts once every informer
    # has synced, about 2 s later: that is when Kueue admits.
    if ready && grep -q '"logger":"job",.*"msg":"Starting workers"' "$state/kueue.log"; then
      echo "kueue: ready in $(secs_since "$t0")s (health http://127.0.0.1:$health_port/readyz, log $state/kueue.log)"
      return
    fi
    pid_alive || { tail -30 "$state/kueue.log"; echo "kueue: the manager exited" >&2; exit 1; }
    sleep 0.1
  done
  tail -30 "$state/kueue.log"
  echo "kueue: not ready after 30s" >&2
  exit 1
}

# stop: stop the manager start started, if it did (the CRDs and objects stay on the cluster),
# and remove its metrics certificate from /etc/kueue (also after a manager `make up` ran).
stop() {
  local pidfile="$state/kueue.pid" pid
  if [ -f "$pidfile" ]; then
    pid="$(cat "$pidfile")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" || true; fi
    fi
    rm -f "$pidfile"
  fi
  # The metrics certificate outside the repository, if it is still the one start put there.
  if cmp -s "$state/certs/tls.crt" "$metrics_cert_dir/tls.crt"; then
    rm -f "$metrics_cert_dir/tls.crt" "$metrics_cert_dir/tls.key"
    rmdir "$metrics_cert_dir" "$(dirname "$metrics_cert_dir")" /etc/kueue 2>/dev/null || true
  fi
}

# status: /readyz answers; with KUEUE_LOG (the manager's log, from byte KUEUE_LOG_FROM on), also
# its Job controller's workers run (/readyz answers ≈ 2 s before Kueue can admit).
status() {
  ready || return 1
  [ -n "${KUEUE_LOG:-}" ] || return 0
  tail -c "+$((${KUEUE_LOG_FROM:-0} + 1))" "$KUEUE_LOG" 2>/dev/null | grep -q '"logger":"job",.*"msg":"Starting workers"'
}

# queues NAMESPACE...: apply ResourceFlavor default, Cohort toolgate sized to the node, ClusterQueue
# toolgate (nominal quota 0: it borrows the Cohort's; hack/addons/kueue/queues.yaml.tmpl) and a
# LocalQueue toolgate in each NAMESPACE. The Cohort's quota is
# the Node's status.allocatable (cpu, memory, pods) minus
#   - the requests of the Pods on it that no Job owns (the operator's replicas, the egress
#     proxy, the gateway: they run beside the queued Jobs, outside Kueue), and
#   - KUEUE_RESERVE_CPU (millicores, default 500) and KUEUE_RESERVE_MEMORY (MiB, default 0):
#     the cluster's host processes, which the kubelet's allocatable does not count (make up
#     passes their resident memory).
# Idempotent: make up re-sizes it on every run. Prints the sizing.
queues() {
  local k=("$kubectl" --kubeconfig "$admin_kubeconfig") tmp sizing node ns
  # In files, not arguments: a busy node's Pod list is over the kernel's argument limit.
  tmp="$(mktemp -d)"
  "${k[@]}" get nodes -o json >"$tmp/node.json"
  node="$(jq -r '.items[0].metadata.name' "$tmp/node.json")"
  "${k[@]}" get pods -A --field-selector "spec.nodeName=$node" -o json >"$tmp/pods.json"
  # One line: NODE CPU_MILLI MEMORY_MI PODS, then a human-readable account of the sizing.
  sizing="$(jq -rn --slurpfile nodes "$tmp/node.json" --slurpfile podlists "$tmp/pods.json" \
    --argjson rcpu "${KUEUE_RESERVE_CPU:-500}" --argjson rmem "${KUEUE_RESERVE_MEMORY:-0}" '
    def qty: if type == "number" then . else
      (capture("^(?<n>[0-9.]+)(?<s>[a-zA-Z]*)$") // error("quantity \(.)")) as $c |
      ($c.n | tonumber) * ({"": 1, "m": 0.001, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
        "Ki": 1024, "Mi": 1048576, "Gi": 1073741824, "Ti": 1099511627776}[$c.s]
        // error("unit \($c.s)")) end;
    def req($r): [.resources.requests[$r]? // 0 | qty] | add;
    # What the scheduler counts for a Pod: its containers, or its largest init container if
    # that is more, plus the runtime overhead.
    def podreq($r): ([.spec.containers[] | req($r)] | add) as $c |
      (.spec.initContainers // [] | map(req($r)) | max // 0) as $i |
      ([$c, $i] | max) + (.spec.overhead[$r]? // 0 | qty);
    $nodes[0] as $node | $podlists[0] as $pods |
    ($node.items[0].status.allocatable) as $a |
    [$pods.items[] | select(.status.phase != "Succeeded" and .status.phase != "Failed")
      | select([.metadata.ownerReferences[]?.kind] | index("Job") | not)] as $outside |
    {cpu: ($outside | map(podreq("cpu")) | add // 0), memory: ($outside | map(podreq("memory")) | add // 0),
     storage: ($outside | map(podreq("ephemeral-storage")) | add // 0), pods: ($outside | length)} as $o |
    {cpu: ((($a.cpu | qty) - $o.cpu) * 1000 - $rcpu | floor),
     memory: ((($a.memory | qty) - $o.memory) / 1048576 - $rmem | floor),
     storage: ((($a["ephemeral-storage"] | qty) - $o.storage) / 1048576 | floor),
     pods: (($a.pods | qty) - $o.pods | floor)} as $q |
    if $q.cpu <= 0 or $q.memory <= 0 or $q.pods <= 0 or $q.storage <= 0 then error("nothing left for the queue: \($q)") else . end |
    "\($node.items[0].metadata.name) \($q.cpu) \($q.memory) \($q.pods) \($q.storage)",
    "allocatable cpu \($a.cpu), memory \($a.memory), pods \($a.pods); minus \($o.pods) Pods outside Jobs (cpu \($o.cpu * 1000 | round)m, memory \($o.memory / 1048576 | round)Mi) and the host reserve (cpu \($rcpu)m, memory \($rmem)Mi)"
  ')" || { rm -rf "$tmp"; echo "kueue: cannot size the ClusterQueue from the node" >&2; exit 1; }
  rm -rf "$tmp"
  local cpu mem pods storage detail
  read -r node cpu mem pods storage <<<"$(head -1 <<<"$sizing")"
  detail="$(tail -1 <<<"$sizing")"
  {
    sed -e "s|@NODE@|$node|" -e "s|@SIZING@|$detail|" -e "s|@CPU@|${cpu}m|" -e "s|@MEMORY@|${mem}Mi|" \
      -e "s|@PODS@|$pods|" -e "s|@STORAGE@|${storage}Mi|" "$root/hack/addons/kueue/queues.yaml.tmpl"
    for ns in "$@"; do
      printf -- '---\n'
      sed "s|@NAMESPACE@|$ns|" "$root/hack/addons/kueue/localqueue.yaml.tmpl"
    done
  } | "${k[@]}" apply -f - >/dev/null
  echo "kueue: Cohort toolgate (ClusterQueue toolgate borrows it): cpu ${cpu}m, memory ${mem}Mi, ephemeral-storage ${storage}Mi, pods $pods ($detail); LocalQueue toolgate in: $*"
}

# group NAME NAMESPACE [N]: a requester group, ClusterQueue NAME in Cohort toolgate and
# LocalQueue NAME in NAMESPACE (hack/addons/kueue/group.yaml.tmpl), which may borrow at most the
# Cohort's quota divided by N (default 1: all of it), read from Cohort toolgate (queues first).
# N groups of N busy at once then each run the same number of Jobs of one size: the shares of
# completions stay even whatever order their Jobs arrived in (docs/bursts.md, "Fair shares").
# Idempotent.
group() {
  local name="${1:?group NAME NAMESPACE [N]}" ns="${2:?group NAME NAMESPACE [N]}" n="${3:-1}" limits
  local k=("$kubectl" --kubeconfig "$admin_kubeconfig")
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "kueue: group: N must be a positive integer, not $n" >&2; exit 2; }
  # One line: CPU MEMORY STORAGE PODS, the Cohort's quotas divided by N, rounded down, in the
  # units queues writes (m, Mi, Mi, a count).
  limits="$("${k[@]}" get cohort toolgate -o json | jq -r --argjson n "$n" '
    def milli: capture("^(?<v>[0-9]+)(?<u>m|Mi|)$") // error("quantity \(.)") |
      (.v | tonumber) * (if .u == "m" then 1 else 1000 end);
    def mebi: capture("^(?<v>[0-9]+)(?<u>Mi|Gi)$") // error("quantity \(.)") |
      (.v | tonumber) * (if .u == "Gi" then 1024 else 1 end);
    [.spec.resourceGroups[].flavors[] | select(.name == "default") | .resources[] | {(.name): .nominalQuota}] | add |
    "\((.cpu | tostring | milli) / $n | floor)m \((.memory | mebi) / $n | floor)Mi \((.["ephemeral-storage"] | mebi) / $n | floor)Mi \((.pods | tostring | tonumber) / $n | floor)"
  ')" || { echo "kueue: group: cannot read Cohort toolgate's quota (run queues first)" >&2; exit 1; }
  local cpu mem storage pods
  read -r cpu mem storage pods <<<"$limits"
  sed -e "s|@NAME@|$name|g" -e "s|@NAMESPACE@|$ns|" -e "s|@N@|$n|" -e "s|@CPU@|$cpu|" \
    -e "s|@MEMORY@|$mem|" -e "s|@STORAGE@|$storage|" -e "s|@PODS@|$pods|" \
    -e "s|@LIMITS@|cpu $cpu, memory $mem, ephemeral-storage $storage, pods $pods|" \
    "$root/hack/addons/kueue/group.yaml.tmpl" | "${k[@]}" apply -f - >/dev/null
  echo "kueue: requester group $name (ClusterQueue $name, LocalQueue $ns/$name): borrows at most cpu $cpu, memory $mem, ephemeral-storage $storage, pods $pods (Cohort toolgate / $n)"
}

case "${1:-build}" in
  build) build ;;
  manifests) render_manifests ;;
  prepare) prepare ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  queues) shift; queues "$@" ;;
  group) shift; group "$@" ;;
  *) echo "usage: $0 build|manifests|prepare|start|stop|status|queues NAMESPACE...|group NAME NAMESPACE [N]" >&2; exit 2 ;;
esac
