#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, without Docker and without downloads
# beyond the Go module proxy and Debian apt. All state lives in .cluster/ (git-ignored).
# See docs/local-cluster.md.
#
#   hack/cluster.sh up              build what is missing, start everything, wait until ready
#   hack/cluster.sh down [--purge]  stop everything, remove what up created (--purge: .cluster/ too)
#   hack/cluster.sh status          which components run, node readiness (exit 1 unless healthy)
#   hack/cluster.sh restart COMPONENT [--kill]  stop (SIGTERM; --kill: SIGKILL) and start one component, wait until ready
#   hack/cluster.sh images          build and pack all images into bin/images/
#   hack/cluster.sh binaries        build the missing cluster binaries into bin/k8s (make up does it too)
#   hack/cluster.sh load [TAR...]   import image tarballs (default: bin/images/*.tar)
#   hack/cluster.sh env             print the settings (source .cluster/cluster.env)
#   hack/cluster.sh smoke           run the smoke test against the running cluster
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/cluster/lib.sh
. "$here/cluster/lib.sh"
# shellcheck source=SCRIPTDIR/cluster/prereqs.sh
. "$here/cluster/prereqs.sh"
# shellcheck source=SCRIPTDIR/cluster/pki.sh
. "$here/cluster/pki.sh"
# shellcheck source=SCRIPTDIR/cluster/config.sh
. "$here/cluster/config.sh"
# shellcheck source=SCRIPTDIR/cluster/addons.sh
. "$here/cluster/addons.sh"
# shellcheck source=SCRIPTDIR/cluster/up.sh
. "$here/cluster/up.sh"
# shellcheck source=SCRIPTDIR/cluster/down.sh
. "$here/cluster/down.sh"
# shellcheck source=SCRIPTDIR/cluster/restart.sh
. "$here/cluster/restart.sh"

usage() {
  sed -n '/^#   hack/s/^# *//p' "${BASH_SOURCE[0]}" >&2
  exit 2
}

require_root() {
  [ "$(id -u)" = 0 ] || die "must run as root (containerd, kubelet, iptables, mounts)"
}

main() {
  local cmd="${1:-}"
  [ $# -gt 0 ] && shift
  case "$cmd" in
    up) require_root; cmd_up ;;
    down) require_root; cmd_down "$@" ;;
    status) cmd_status ;;
    restart) require_root; cmd_restart "$@" ;;
    images) build_images ;;
    binaries) ensure_binaries ;;
    load)
      component_pid containerd >/dev/null || die "containerd is not running (hack/cluster.sh up)"
      [ $# -gt 0 ] || set -- "$IMAGES_DIR"/*.tar
      load_images "$@"
      log "imported: $*"
      ;;
    env) cat "$STATE/cluster.env" ;;
    smoke) exec "$here/cluster/smoke.sh" "$@" ;;
    *) usage ;;
  esac
}

main "$@"
