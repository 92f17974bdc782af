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

version() { # the module version pinned in the tools module, plus its go.sum digest
  local v
  v="$(cd "$mod" && go list -m -f '{{.Version}}' gvisor.dev/gvisor)"
  echo "$v+$(sha256sum "$mod/go.sum" | cut -c1-12)"
}

build() {
  local ver v start=$SECONDS
  ver="$(version)"
  if [ -x "$bin" ] && [ "$(cat "$bin.version" 2>/dev/null)" = "$ver" ]; then
    return
  fi
  echo "gvisor: building runsc $ver (first time: minutes)"
  mkdir -p "$out"
  v="${ver%%+*}"
  # Static, as gVisor's own release build: runsc re-executes itself inside the sandbox's
  # namespaces and chroot, where no shared library is at hand.
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X gvisor.dev/gvisor/runsc/version.version=module-$v" \
    -o "$bin.tmp" gvisor.dev/gvisor/runsc)
  mv -f "$bin.tmp" "$bin"
  echo "$ver" >"$bin.version"
  echo "gvisor: built in $((SECONDS - start))s"
}

case "${1:-build}" in
  build) build ;;
  version) version ;;
  *) echo "usage: $0 build|version" >&2; exit 2 ;;
esac
