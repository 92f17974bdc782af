#!/usr/bin/env bash
# Smoke test of the local cluster (hack/cluster.sh up first). Re-runnable.
#   hack/cluster/smoke.sh [-n RUNS] [--keep]
# 1. A Job of toolgate.local/smoke:dev (imagePullPolicy: Never, Pod Security "restricted")
#    writes JSON to /dev/termination-log; it must come back in the Pod's
#    status.containerStatuses[0].state.terminated.message. Timed RUNS times.
# 2. A Job sleeping 300 s with activeDeadlineSeconds: 5 must end Failed/DeadlineExceeded.
# 3. A Pod must reach https://10.0.0.1/version (the `kubernetes` Service, i.e. kube-proxy) with
#    its service-account token.
# Latencies are measured by polling with kubectl (≈ 0.1–0.2 s resolution).
set -euo pipefail

# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NS=toolgate-smoke
RUNS=1
KEEP=false
while [ $# -gt 0 ]; do
  case "$1" in
    -n) RUNS="$2"; shift 2 ;;
    --keep) KEEP=true; shift ;;
    *) echo "usage: $0 [-n RUNS] [--keep]" >&2; exit 2 ;;
  esac
done

# pod_spec ARGS_JSON AUTOMOUNT: a Pod spec that passes Pod Security "restricted".
pod_spec() {
  cat <<EOF
      restartPolicy: Never
      automountServiceAccountToken: $2
      securityContext:
        runAsNonRoot: true
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: smoke
        image: $SMOKE_IMAGE
        imagePullPolicy: Never
        args: $1
        resources:
          requests: {cpu: 10m, memory: 16Mi}
          limits: {cpu: 200m, memory: 64Mi}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
EOF
}

# create_job NAME ARGS_JSON [ACTIVE_DEADLINE_SECONDS]
create_job() {
  kc apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $1, namespace: $NS}
spec:
  backoffLimit: 0
  ${3:+activeDeadlineSeconds: $3}
  template:
    spec:
$(pod_spec "$2" false)
EOF
}

pod_of() { kc get pods -n "$NS" -l "job-name=$1" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }

termination_message() {
  kc get pods -n "$NS" -l "job-name=$1" \
    -o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.message}' 2>/dev/null
}

job_condition() { # NAME TYPE -> "True:Reason" when set
  kc get job -n "$NS" "$1" \
    -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}:{.status.conditions[?(@.type==\"$2\")].reason}" 2>/dev/null
}

# poll TIMEOUT CHECK...: retry until CHECK succeeds; prints the seconds since $start.
poll() {
  local timeout="$1"
  shift
  local deadline=$(($(now_us) + timeout * 1000000))
  until "$@"; do
    [ "$(now_us)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
  fmt_secs "$(($(now_us) - start))"
}

has_message() { [ -n "$(termination_message "$1")" ]; }
job_is() { [[ "$(job_condition "$1" "$2")" == "True:$3"* ]]; }

setup_namespace() {
  kc delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
  kc create namespace "$NS" >/dev/null
  kc label namespace "$NS" pod-security.kubernetes.io/enforce=restricted >/dev/null
  # The default ServiceAccount appears asynchronously; Pods need it.
  start="$(now_us)"
  poll 30 has_default_sa >/dev/null ||
    { log "FAIL: no default ServiceAccount in $NS"; exit 1; }
}

# result_job RUN: returns "seconds-to-message seconds-to-complete" on stdout.
result_job() {
  local name="result-$1" t_msg t_done msg
  start="$(now_us)"
  create_job "$name" '["result"]'
  t_msg="$(poll 60 has_message "$name")" || { log "FAIL: $name: no termination message"; return 1; }
  t_done="$(poll 60 job_is "$name" Complete "")" || { log "FAIL: $name: not Complete"; return 1; }
  msg="$(termination_message "$name")"
  echo "$msg" | jq -e '.ok == true and .uid == 65532' >/dev/null ||
    { log "FAIL: $name: unexpected message: $msg"; return 1; }
  log "$name: terminated.message after ${t_msg}s, Job Complete after ${t_done}s: $msg"
}

deadline_job() {
  local t
  start="$(now_us)"
  create_job deadline '["sleep","300s"]' 5
  t="$(poll 60 job_is deadline Failed DeadlineExceeded)" ||
    { log "FAIL: deadline: $(job_condition deadline Failed)"; return 1; }
  log "deadline: Failed/DeadlineExceeded after ${t}s (activeDeadlineSeconds: 5)"
  t="$(poll 30 no_pods deadline)" || { log "FAIL: deadline: Pod still present"; return 1; }
  log "deadline: Pod gone after ${t}s"
}

has_default_sa() { kc get serviceaccount default -n "$NS" >/dev/null 2>&1; }
no_pods() { [ -z "$(pod_of "$1")" ]; }

probe_job() {
  local t msg
  start="$(now_us)"
  kc apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: probe, namespace: $NS}
spec:
  backoffLimit: 0
  template:
    spec:
$(pod_spec "[\"probe\",\"https://$SERVICE_IP/version\"]" true)
EOF
  t="$(poll 60 has_message probe)" || { log "FAIL: probe: no termination message"; return 1; }
  msg="$(termination_message probe)"
  echo "$msg" | jq -e '.status == 200 and (.body.gitVersion | startswith("v1."))' >/dev/null ||
    { log "FAIL: probe: $msg"; return 1; }
  log "probe: https://$SERVICE_IP/version from a Pod -> $(echo "$msg" | jq -c '{status, ms, gitVersion: .body.gitVersion}') after ${t}s"
}

logs_check() {
  local out
  out="$(kc logs -n "$NS" "job/result-1" 2>&1)" || { log "FAIL: kubectl logs: $out"; return 1; }
  log "kubectl logs job/result-1 (apiserver -> kubelet): $out"
}

main() {
  local i
  log "smoke test in namespace $NS (image $SMOKE_IMAGE)"
  setup_namespace
  for i in $(seq "$RUNS"); do result_job "$i"; done
  logs_check
  deadline_job
  probe_job
  if ! $KEEP; then kc delete namespace "$NS" --wait=false >/dev/null; fi
  log "smoke test passed"
}

main
