#!/bin/sh
# The gvisor RuntimeClass's runtime binary: containerd's runc shim calls this as it would call
# runc (create/start/state/kill/delete/exec ... with runc's flags). Why a wrapper:
#  - The shim watches a container's init pid for its exit. runsc with the CRI annotations puts a
#    Pod's containers into one sandbox (the pause container's) and their exits reach only
#    containerd-shim-runsc-v1, which Debian does not ship. So each container of the Pod
#    becomes a sandbox of its own (the annotations renamed), as Docker runs gVisor.
#  - The pause (sandbox) container stays with runc: it only holds the Pod's network namespace,
#    and a runsc pause would take the Pod's interface into its own netstack, leaving none for the
#    body's sandbox.
#  - runsc says "sandbox is not running" where runc says "container not running", the words
#    the shim takes for "already ended" when it kills what is left of a Pod.
#  - gVisor 20221219 tells the root network namespace by /proc/sys/net/core/rmem_default being
#    there; kernels since 5.x show it in every namespace. `runsc start` (which copies the Pod's
#    interfaces into the sandbox) therefore runs with /proc/sys/net hidden in a mount namespace
#    of its own.
# docs/local-cluster-limits.md, "gVisor", says what this does and does not show.
set -eu
RUNSC=/usr/bin/runsc
RUNSC_FLAGS="--host-uds=open"
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
if [ "$cmd" = start ]; then
  # /proc/sys hidden but for what runsc reads (fs, kernel, vm); /proc/sys/net is absent.
  save="$(dirname "$root")/procsys"
  mkdir -p "$save"
  exec unshare -m --propagation private sh -c '
    save="$1"; shift
    mount --bind /proc/sys "$save" && mount -t tmpfs -o size=4k toolgate-hide /proc/sys || exit 1
    for d in fs kernel vm; do mkdir "/proc/sys/$d" && mount --bind "$save/$d" "/proc/sys/$d" || exit 1; done
    exec "$@"' runsc-start "$save" "$RUNSC" $RUNSC_FLAGS "$@"
fi
exec "$RUNSC" $RUNSC_FLAGS "$@"
