#!/bin/sh
# The gvisor RuntimeClass's runtime binary: containerd's runc shim calls this as it would call
# runc (create/start/state/kill/delete/exec ... with runc's flags). It runs bin/gvisor/runsc,
# built from gVisor's Go module (hack/addons/gvisor.sh), on its default platform, systrap.
# Why a wrapper (each point re-checked with that release):
#  - The shim watches a container's init pid for its exit. runsc with the CRI annotations puts a
#    Pod's containers into one sandbox (the pause container's) and their exits reach only
#    containerd-shim-runsc-v1, which this cluster does not use. So each container of the Pod
#    becomes a sandbox of its own (the annotations renamed), as Docker runs gVisor.
#  - The pause (sandbox) container stays with runc: it only holds the Pod's network namespace,
#    and a runsc pause would take the Pod's interface into its own netstack, leaving none for the
#    body's sandbox.
#  - runsc says "sandbox is not running" where runc says "container not running", the words
#    the shim takes for "already ended" when it kills what is left of a Pod.
# (Debian's runsc 20221219 also needed /proc/sys/net hidden from `runsc start`: it told the root
# network namespace by /proc/sys/net/core/rmem_default; today's looks for dev_weight, which
# kernels show in the root namespace only.)
# docs/local-cluster-limits.md, "gVisor", says what this does and does not show.
set -eu
RUNSC="${0%/hack/cluster/runsc-runtime.sh}/bin/gvisor/runsc" # containerd calls it by its full path
# systrap without its fast path: with it, stub threads and the sentry spin on a processor waiting
# for work, which on this 2-core node takes the processor from the signer and the operator
# (a session call: 71-90 ms p50 with it, 49-54 ms without; docs/reports/2026-12-06-gvisor-systrap.md).
RUNSC_FLAGS="--host-uds=open --systrap-disable-fast-path"
RUNC=/usr/bin/runc

root="" log="" bundle="" cmd=""
prev=""
for a in "$@"; do
  case "$prev" in
    --root) root="$a" ;;
    --log) log="$a" ;;
    --bundle | -b) bundle="$a" ;;
  esac
  case "$a" in
    create | start | state | kill | delete | exec | ps | pause | resume | update | events | checkpoint | restore | run)
      [ -z "$cmd" ] && cmd="$a" ;;
  esac
  prev="$a"
done
[ -n "$bundle" ] || bundle="$(dirname "${log:-/nonexistent/x}")"

is_sandbox() { grep -q '"io.kubernetes.cri.container-type": *"sandbox"' "$bundle/config.json" 2>/dev/null; }
# toolgate's signer (the runner that holds the attempt's key, never the body) stays with runc
# too: each gVisor container here is a sandbox of its own with a copy of the Pod's interface,
# and a second one would answer (reset) the body's connections. The body reaches it by a Unix
# socket in a volume both mount: a host socket, which the body's sandbox may open
# (--host-uds=open). On a real cluster (containerd-shim-runsc-v1) both containers share one
# sandbox and need neither.
is_signer() { grep -q '"io.kubernetes.cri.container-name": *"toolgate-signer"' "$bundle/config.json" 2>/dev/null; }

if [ "$cmd" = create ] || [ "$cmd" = run ]; then
  if is_sandbox || is_signer; then exec "$RUNC" "$@"; fi
  sed -i 's/"io\.kubernetes\.cri\.container-type"/"toolgate.local\/cri-container-type"/; s/"io\.kubernetes\.cri\.sandbox-id"/"toolgate.local\/cri-sandbox-id"/' "$bundle/config.json"
  exec "$RUNSC" $RUNSC_FLAGS "$@"
fi
# After create: runc keeps <root>/<id>/state.json (the id is one of the arguments); all else is runsc's.
if [ -n "$root" ]; then
  for a in "$@"; do
    case "$a" in -* | */*) continue ;; esac
    if [ -f "$root/$a/state.json" ]; then exec "$RUNC" "$@"; fi
  done
fi
if [ "$cmd" = kill ]; then
  # A sandbox whose body has ended is gone: say it as runc would ("container not running"),
  # which the shim takes for done (runsc: "sandbox is not running").
  if out="$("$RUNSC" $RUNSC_FLAGS "$@" 2>&1)"; then exit 0; fi
  case "$out" in *"is not running"* | *"not found"*) echo "container not running" >&2 ;; *) echo "$out" >&2 ;; esac
  exit 1
fi
exec "$RUNSC" $RUNSC_FLAGS "$@"
