#!/usr/bin/env bash
# Builds the local cluster's binaries from Go modules (no download but the Go module proxy)
# into bin/k8s: etcd, the Kubernetes components, the NetworkPolicy enforcer and the add-ons.
#
#   hack/k8s-binaries.sh [component...]            build the missing or outdated ones
#                                                  (default: the envtest set: etcd kube-apiserver kubectl)
#   hack/k8s-binaries.sh --missing component...    only print the missing or outdated ones
#
# All of them come from ONE wrapper module (bin/k8s-src/cluster-<spec>) and one `go build`:
# minimal version selection gives the whole set one version of each shared dependency
# (client-go, grpc, protobuf, otel...), so each shared package is compiled once, and the go
# command schedules every compile and link together (one binary links while the other core
# compiles). On an idle 2-core machine with an empty build cache that is ~12.5 minutes for all
# ten, against ~17 built module by module (docs/local-cluster.md, "Timings").
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
KNP_VERSION="${KNP_VERSION:-v0.8.0}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
PROVLIB_VERSION="${PROVLIB_VERSION:-v13.1.0}"
# kube-network-policies v0.8.0 asks for nri v0.9.0, which does not compile against the
# runtime-spec Kubernetes v1.37 brings (Pids.Limit became a pointer); v0.12.5 does.
NRI_VERSION="${NRI_VERSION:-v0.12.5}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${K8S_BIN_DIR:-$root/bin/k8s}"

# staging modules that kubernetes requires as v0.0.0 and resolves through replace directives.
staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
  kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver streaming)
k8s_cmds=(kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet kube-proxy)

# Our own mains, copied into the wrapper module: component => source.
declare -A own_main=(
  [kube-network-policies]="$root/hack/netpol/main.go"
  [coredns]="$root/hack/addons/coredns/main.go"
  [provisioner]="$root/hack/addons/provisioner/main.go"
)

# package_of COMPONENT: its main package in the wrapper module.
package_of() {
  local c
  if [ "$1" = etcd ]; then echo go.etcd.io/etcd/server/v3; return; fi
  if [ -n "${own_main[$1]:-}" ]; then echo "./$1"; return; fi
  for c in "${k8s_cmds[@]}"; do
    if [ "$c" = "$1" ]; then echo "k8s.io/kubernetes/cmd/$1"; return; fi
  done
  echo "k8s-binaries: unknown component $1" >&2
  return 1
}

# spec: the wrapper module's requirements. Its hash names the module's folder and is part of
# every binary's version, so a changed pin rebuilds all of them.
spec() {
  local m c
  echo "require ("
  printf '\tk8s.io/kubernetes %s\n' "$K8S_VERSION"
  printf '\tgo.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION"
  printf '\tsigs.k8s.io/kube-network-policies %s\n' "$KNP_VERSION"
  printf '\tgithub.com/coredns/coredns %s\n' "$COREDNS_VERSION"
  printf '\tsigs.k8s.io/sig-storage-lib-external-provisioner/v13 %s\n' "$PROVLIB_VERSION"
  printf '\tgithub.com/containerd/nri %s\n' "$NRI_VERSION"
  echo ")"
  echo
  # tool directives keep the Kubernetes and etcd mains in the module graph through `go mod tidy`.
  for c in "${k8s_cmds[@]}"; do echo "tool k8s.io/kubernetes/cmd/$c"; done
  echo "tool go.etcd.io/etcd/server/v3"
  echo
  for m in "${staging[@]}"; do echo "replace k8s.io/$m => k8s.io/$m v0.${K8S_VERSION#v1.}"; done
}

spec_hash() { spec | sha256sum | cut -c1-12; }

# want COMPONENT: the version a current binary was built for (recorded next to it).
want() {
  local v="$K8S_VERSION+$(spec_hash)"
  if [ -n "${own_main[$1]:-}" ]; then v+="+$(sha256sum "${own_main[$1]}" | cut -c1-12)"; fi
  echo "$v"
}

current() { [ -x "$out/$1" ] && [ "$(cat "$out/.$1.version" 2>/dev/null)" = "$(want "$1")" ]; }

# wrapper_module: bin/k8s-src/cluster-<spec hash> with go.mod tidied once and our mains
# copied in (always: a changed main is rebuilt, the go command decides what else to redo).
wrapper_module() {
  local dir c
  dir="$root/bin/k8s-src/cluster-$(spec_hash)"
  mkdir -p "$dir"
  for c in "${!own_main[@]}"; do
    mkdir -p "$dir/$c"
    grep -v '^//go:build ignore' "${own_main[$c]}" >"$dir/$c/main.go"
  done
  if [ ! -f "$dir/go.sum" ]; then
    { printf 'module toolgate.local/cluster-build\n\ngo 1.26\n\n'; spec; } >"$dir/go.mod"
    (cd "$dir" && GOFLAGS=-mod=mod go mod tidy) >&2
  fi
  echo "$dir"
}

# ldflags: stripped, and the version Kubernetes' binaries report.
ldflags() {
  local ver="$K8S_VERSION" major minor flags pkg
  major="${ver#v}"; major="${major%%.*}"; minor="${ver#v*.}"; minor="${minor%%.*}"
  flags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$ver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  echo "$flags"
}

# build COMPONENT...: the given ones, in one go build, into a scratch folder first (a
# package path ending in /v3 names its binary after the element before it).
build() {
  local dir c pkgs=() start=$SECONDS
  dir="$(wrapper_module)"
  for c in "$@"; do pkgs+=("$(package_of "$c")"); done
  tmp="$(mktemp -d "$out/.build.XXXXXX")" # global: the EXIT trap reads it
  trap 'rm -rf "$tmp"' EXIT
  echo "k8s-binaries: building $* (Kubernetes $K8S_VERSION, etcd $ETCD_VERSION, kube-network-policies $KNP_VERSION, CoreDNS $COREDNS_VERSION) in one go build; the first time takes minutes"
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$(ldflags)" -o "$tmp/" "${pkgs[@]}")
  for c in "$@"; do
    if [ "$c" = etcd ]; then mv "$tmp/server" "$out/etcd"; else mv "$tmp/$c" "$out/$c"; fi
    want "$c" >"$out/.$c.version"
  done
  echo "k8s-binaries: built $* in $((SECONDS - start))s"
}

mode=build
if [ "${1:-}" = --missing ]; then mode=missing; shift; fi
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(etcd kube-apiserver kubectl)
mkdir -p "$out"
missing=()
for c in "${components[@]}"; do
  package_of "$c" >/dev/null
  if current "$c"; then
    [ "$mode" = missing ] || echo "k8s-binaries: $c present"
  else
    missing+=("$c")
  fi
done
if [ "$mode" = missing ]; then
  [ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"
  exit 0
fi
[ ${#missing[@]} -eq 0 ] || build "${missing[@]}"
