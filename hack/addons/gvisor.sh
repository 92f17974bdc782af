#!/usr/bin/env bash
# gVisor's runsc for the local cluster's `gvisor` RuntimeClass, built from Go modules (gVisor's
# `go` branch, served by the module proxy as gvisor.dev/gvisor at a pseudo-version).
#
#   hack/addons/gvisor.sh build     build bin/gvisor/runsc unless present for this version
#   hack/addons/gvisor.sh version   print the version the binary is built for
#
# The version comes from hack/tools/gvisor/go.mod (a module of its own, `go get -tool`, so
# gVisor's dependencies never enter toolgate's go.mod); bump it there with
#   cd hack/tools/gvisor && go get -tool gvisor.dev/gvisor/runsc@<pseudo-version> && go mod tidy
# docs/local-cluster-limits.md, "gVisor", says how the cluster runs it.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
mod="$root/hack/tools/gvisor"
out="${GVISOR_DIR:-$root/bin/gvisor}"
bin="$out/runsc"

# shellcheck source=hack/lib/toolmod.sh
. "$root/hack/lib/toolmod.sh"

version() { toolmod_version "$mod" gvisor.dev/gvisor; }

# build: static, as gVisor's own release build: runsc re-executes itself inside the sandbox's
# namespaces and chroot, where no shared library is at hand.
build() {
  local ver
  ver="$(version)"
  toolmod_build gvisor "$mod" "$ver" "$bin" \
    -ldflags "-s -w -X gvisor.dev/gvisor/runsc/version.version=module-${ver%%+*}" gvisor.dev/gvisor/runsc
}

case "${1:-build}" in
  build) build ;;
  version) version ;;
  *) echo "usage: $0 build|version" >&2; exit 2 ;;
esac
