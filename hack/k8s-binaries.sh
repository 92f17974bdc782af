#!/usr/bin/env bash
# Builds Kubernetes binaries from Go modules (no download but the Go module proxy) into bin/k8s.
# Usage: hack/k8s-binaries.sh [component...]   (default: the envtest set: etcd kube-apiserver kubectl)
# A binary is rebuilt only when it is missing or was built for another version.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
KNP_VERSION="${KNP_VERSION:-v0.8.0}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.15.0}"
PROVLIB_VERSION="${PROVLIB_VERSION:-v13.1.0}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${K8S_BIN_DIR:-$root/bin/k8s}"
work="$root/bin/k8s-src"
mkdir -p "$out" "$work"

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(etcd kube-apiserver kubectl)

# staging modules that kubernetes requires as v0.0.0 and resolves through replace directives.
staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
  kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver streaming)

up_to_date() { # name version
  [ -x "$out/$1" ] && [ "$(cat "$out/.$1.version" 2>/dev/null)" = "$2" ]
}

k8s_module() {
  local dir="$work/kubernetes-$K8S_VERSION" minor="${K8S_VERSION#v1.}"
  if [ ! -f "$dir/go.mod" ]; then
    mkdir -p "$dir"
    {
      echo "module toolgate.local/k8s-build"
      echo
      echo "go 1.26"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      for m in "${staging[@]}"; do echo "replace k8s.io/$m => k8s.io/$m v0.$minor"; done
    } >"$dir/go.mod"
  fi
  echo "$dir"
}

etcd_module() {
  local dir="$work/etcd-$ETCD_VERSION"
  if [ ! -f "$dir/go.mod" ]; then
    mkdir -p "$dir"
    printf 'module toolgate.local/etcd-build\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$dir/go.mod"
  fi
  echo "$dir"
}

build_k8s() { # component
  local name="$1" dir ver="$K8S_VERSION" major minor ldflags
  up_to_date "$name" "$ver" && { echo "k8s-binaries: $name $ver present"; return; }
  dir="$(k8s_module)"
  major="${ver#v}"; major="${major%%.*}"; minor="${ver#v*.}"; minor="${minor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$ver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  echo "k8s-binaries: building $name $ver (first time takes minutes)"
  local start=$SECONDS
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" \
    -o "$out/$name" "k8s.io/kubernetes/cmd/$name")
  echo "$ver" >"$out/.$name.version"
  echo "k8s-binaries: built $name in $((SECONDS - start))s"
}

build_etcd() {
  up_to_date etcd "$ETCD_VERSION" && { echo "k8s-binaries: etcd $ETCD_VERSION present"; return; }
  local dir start=$SECONDS
  dir="$(etcd_module)"
  echo "k8s-binaries: building etcd $ETCD_VERSION"
  (cd "$dir" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" \
    -o "$out/etcd" go.etcd.io/etcd/server/v3)
  echo "$ETCD_VERSION" >"$out/.etcd.version"
  echo "k8s-binaries: built etcd in $((SECONDS - start))s"
}

# kube-network-policies: the local cluster's NetworkPolicy enforcer. Its own main
# (hack/netpol/main.go: kubeconfig instead of in-cluster config, plus a guard) in a wrapper
# module requiring sigs.k8s.io/kube-network-policies.
build_knp() {
  local dir="$work/kube-network-policies-$KNP_VERSION" src="$root/hack/netpol/main.go" ver start=$SECONDS
  ver="$KNP_VERSION+$(sha256sum "$src" | cut -c1-12)"
  up_to_date kube-network-policies "$ver" && { echo "k8s-binaries: kube-network-policies $ver present"; return; }
  mkdir -p "$dir"
  grep -v '^//go:build ignore' "$src" >"$dir/main.go"
  if [ ! -f "$dir/go.mod" ]; then
    printf 'module toolgate.local/knp-build\n\ngo 1.26\n\nrequire sigs.k8s.io/kube-network-policies %s\n' "$KNP_VERSION" >"$dir/go.mod"
  fi
  echo "k8s-binaries: building kube-network-policies $KNP_VERSION"
  (cd "$dir" && GOFLAGS=-mod=mod go mod tidy && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" \
    -o "$out/kube-network-policies" .)
  echo "$ver" >"$out/.kube-network-policies.version"
  echo "k8s-binaries: built kube-network-policies in $((SECONDS - start))s"
}

# The cluster's add-ons, CoreDNS (hack/addons/coredns: only the plugins the Corefile uses) and
# the volume provisioner (hack/addons/provisioner, on sig-storage-lib-external-provisioner), in
# one wrapper module and one `go build`: they share client-go and its dependencies, compiled once.
addons_version() {
  echo "$COREDNS_VERSION+$PROVLIB_VERSION+$(cat "$root"/hack/addons/*/main.go | sha256sum | cut -c1-12)"
}

build_addons() {
  local dir="$work/addons" ver start=$SECONDS p
  ver="$(addons_version)"
  up_to_date coredns "$ver" && up_to_date provisioner "$ver" &&
    { echo "k8s-binaries: coredns, provisioner $ver present"; return; }
  mkdir -p "$dir"
  for p in coredns provisioner; do
    mkdir -p "$dir/$p"
    grep -v '^//go:build ignore' "$root/hack/addons/$p/main.go" >"$dir/$p/main.go"
  done
  printf 'module toolgate.local/addons-build\n\ngo 1.26\n\nrequire (\n\tgithub.com/coredns/coredns %s\n\tsigs.k8s.io/sig-storage-lib-external-provisioner/v13 %s\n)\n' \
    "$COREDNS_VERSION" "$PROVLIB_VERSION" >"$dir/go.mod"
  echo "k8s-binaries: building coredns $COREDNS_VERSION and the volume provisioner"
  (cd "$dir" && GOFLAGS=-mod=mod go mod tidy && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" \
    -o "$out/" ./coredns ./provisioner)
  echo "$ver" >"$out/.coredns.version"
  echo "$ver" >"$out/.provisioner.version"
  echo "k8s-binaries: built coredns and the provisioner in $((SECONDS - start))s"
}

for c in "${components[@]}"; do
  case "$c" in
    etcd) build_etcd ;;
    kube-network-policies) build_knp ;;
    coredns | provisioner) build_addons ;;
    *) build_k8s "$c" ;;
  esac
done
