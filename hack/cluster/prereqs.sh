# shellcheck shell=bash
# Prerequisites of the local cluster: Debian packages, Kubernetes binaries, images.

# ensure_packages: install the Debian packages that are missing (apt-get update first).
ensure_packages() {
  local missing=() p installed
  # One dpkg-query for all: it reads the whole status database each time.
  installed="$(dpkg-query -W -f='${Package} ${Status}\n' "${APT_PACKAGES[@]}" 2>/dev/null || true)"
  for p in "${APT_PACKAGES[@]}"; do
    grep -qx "$p install ok installed" <<<"$installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  log "installed ${missing[*]}"
}

# k8s_binaries ARGS...: hack/k8s-binaries.sh with the pinned versions and bin/k8s.
k8s_binaries() {
  K8S_BIN_DIR="$K8S_BIN" K8S_VERSION="$K8S_VERSION" ETCD_VERSION="$ETCD_VERSION" KNP_VERSION="$KNP_VERSION" \
    COREDNS_VERSION="$COREDNS_VERSION" PROVLIB_VERSION="$PROVLIB_VERSION" \
    "$ROOT/hack/k8s-binaries.sh" "$@"
}

# missing_binaries: the cluster's binaries that are missing or were built for another version
# (of a pinned module, or of our own mains: hack/netpol, hack/addons), one per line.
missing_binaries() { k8s_binaries --missing "${K8S_COMPONENTS[@]}"; }

# ensure_binaries: build the missing ones from Go modules (minutes when cold), then Kueue's
# manager and manifests (hack/addons/kueue.sh) and gVisor's runsc (hack/addons/gvisor.sh): each
# from its own tools module, a no-op when present for the pinned version.
# make test's prepare step runs this (make cluster-binaries), so its two lanes never build
# either at once.
ensure_binaries() {
  local missing
  missing="$(missing_binaries)"
  if [ -n "$missing" ]; then
    log "building ${missing//$'\n'/ } (cold: several minutes)"
    # shellcheck disable=SC2086
    k8s_binaries $missing
    log "binaries ready"
  fi
  "$ROOT/hack/addons/kueue.sh" build || die "building Kueue failed (hack/addons/kueue.sh build)"
  "$ROOT/hack/addons/kueue.sh" manifests >/dev/null || die "rendering Kueue's manifests failed (hack/addons/kueue.sh manifests)"
  "$ROOT/hack/addons/gvisor.sh" build || die "building gVisor's runsc failed (hack/addons/gvisor.sh build)"
}

# stale TARGET SOURCE...: TARGET is missing or older than any SOURCE (files or folders).
stale() {
  local target="$1" newer
  shift
  [ -e "$target" ] || return 0
  newer="$(find "$@" -newer "$target" -print -quit 2>/dev/null)"
  [ -n "$newer" ]
}

# go_static OUT PACKAGE [always]: a static linux binary. The standard-library-only pause and
# smoke programs are rebuilt only when their folder changed, which keeps a warm `up` fast and
# independent of other work on go.mod; with "always", go build decides (it leaves an
# up-to-date output untouched).
go_static() {
  local out="$1" pkg="$2"
  [ "${3:-}" = always ] || stale "$out" "$ROOT/${pkg#./}" || return 0
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags='-s -w' -o "$out" "$pkg")
}

# imgpack ARGS...: the image packer (hack/imgpack), built into bin/ when something is packed.
imgpack() {
  go_static "$ROOT/bin/imgpack" ./hack/imgpack always
  "$ROOT/bin/imgpack" "$@"
}

# pack_binary NAME PACKAGE ENTRYPOINT_PATH [always]: build PACKAGE statically and pack it alone
# as toolgate.local/NAME:dev into bin/images/NAME.tar, running as 65532 (non-root).
pack_binary() {
  local name="$1" pkg="$2" dest="$3" bin="$IMAGES_DIR/bin/$1"
  go_static "$bin" "$pkg" "${4:-}"
  stale "$IMAGES_DIR/$name.tar" "$bin" || return 0
  imgpack -name "toolgate.local/$name:dev" -entrypoint "$dest" -user 65532:65532 \
    -file "$bin=$dest" -out "$IMAGES_DIR/$name.tar"
}

# ensure_base_images: the pause (sandbox) image and the smoke-test image.
ensure_base_images() {
  pack_binary pause ./hack/imgpack/pause /pause
  pack_binary smoke ./hack/imgpack/smoke /smoke
}

# has_go_package DIR: DIR holds non-test Go files (cmd/manager may still be empty).
has_go_package() {
  [ -n "$(find "$ROOT/$1" -maxdepth 1 -name '*.go' ! -name '*_test.go' -print -quit 2>/dev/null)" ]
}

# build_images: everything `make images` packs. The operator images are packed only when
# their commands exist: manager.tar carries /manager, /toolgate/toolgate (the CLI) and /toolgate/runner (the runner the
# operator copies into tool Pods); runner.tar carries the runner alone, for init containers.
build_images() {
  ensure_base_images
  local have_runner=false
  if has_go_package cmd/runner; then
    have_runner=true
    pack_binary runner ./cmd/runner /toolgate/runner always
  else
    log "cmd/runner has no Go files yet: skipping toolgate.local/runner:dev"
  fi
  if ! has_go_package cmd/manager; then
    log "cmd/manager has no Go files yet: skipping toolgate.local/manager:dev"
    return 0
  fi
  go_static "$IMAGES_DIR/bin/manager" ./cmd/manager always
  # The CLI rides along for the chart's MCP gateway (toolgate mcp --http).
  go_static "$IMAGES_DIR/bin/toolgate" ./cmd/toolgate always
  local files=(-file "$IMAGES_DIR/bin/manager=/manager" -file "$IMAGES_DIR/bin/toolgate=/toolgate/toolgate")
  if $have_runner; then files+=(-file "$IMAGES_DIR/bin/runner=/toolgate/runner"); fi
  if stale "$IMAGES_DIR/manager.tar" "$IMAGES_DIR/bin/manager" "$IMAGES_DIR/bin/runner" "$IMAGES_DIR/bin/toolgate"; then
    imgpack -name toolgate.local/manager:dev -entrypoint /manager -user 65532:65532 \
      "${files[@]}" -out "$IMAGES_DIR/manager.tar"
  fi
}

# load_images TAR...: import image tarballs into our containerd (CRI namespace k8s.io).
load_images() {
  local tar
  for tar in "$@"; do
    [ -f "$tar" ] || die "no such image tarball: $tar"
    ctr_k8s images import --platform linux/amd64 "$tar" >/dev/null ||
      die "ctr images import $tar failed"
  done
}
