#!/usr/bin/env bash
# Builds the example tool bodies (cmd/tools/*) and packs them into one image,
# toolgate.local/tools:dev -> bin/images/tools.tar:
#
#   /tools/<name>        each example tool (static Go)
#   /bin/busybox         Debian's busybox-static (the sh tool runs `busybox sh -c`)
#   /samples/...         cmd/tools/samples, read-only files for the read_file tool
#   /toolgate/runner     the runner, so the example Tools use `runnerInImage: true`
#   /testdata/wrongarch  cmd/tools/echo built for another architecture (exec format error)
#
# user 65532:65532, PATH=/tools:/bin, workdir /tmp. Repacked only when an input changed.
# Run by `make images` (hack/make/cluster.mk); `make cluster-load` imports it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/cluster/lib.sh
. "$here/cluster/lib.sh"
# shellcheck source=SCRIPTDIR/cluster/prereqs.sh
. "$here/cluster/prereqs.sh"

TOOLS_IMAGE="${TOOLS_IMAGE:-toolgate.local/tools:dev}"
BUSYBOX=/bin/busybox
out="$IMAGES_DIR/tools.tar"
bindir="$IMAGES_DIR/bin/tools"

ensure_busybox() {
  if ! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'install ok installed'; then
    log "installing busybox-static"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends busybox-static >/dev/null
  fi
  [ -x "$BUSYBOX" ] || die "$BUSYBOX is missing after installing busybox-static"
}

main() {
  ensure_busybox
  mkdir -p "$bindir"
  local names=() dir name
  for dir in "$ROOT"/cmd/tools/*/; do
    name="$(basename "$dir")"
    [ -f "$dir/main.go" ] || continue # internal/, samples/
    names+=("$name")
  done
  [ ${#names[@]} -gt 0 ] || die "no tools found under cmd/tools"
  # One go build for all tools (faster than one per tool on 2 cores). It rewrites every
  # output, so build aside and replace only the binaries that changed: their mtimes then
  # say whether the image must be repacked.
  local fresh="$bindir/.build"
  rm -rf "$fresh" && mkdir -p "$fresh"
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags='-s -w' -o "$fresh/" \
    "${names[@]/#/./cmd/tools/}" ./cmd/runner)
  # /testdata/wrongarch: the echo tool built for another architecture, for the adversarial
  # catalogue's exec-format-error rows (test/e2e/catalogue_test.go).
  local other=arm64
  [ "$(go env GOARCH)" != arm64 ] || other=amd64
  (cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH="$other" go build -trimpath -ldflags='-s -w' \
    -o "$fresh/wrongarch" ./cmd/tools/echo)
  for name in "${names[@]}" runner wrongarch; do
    cmp -s "$fresh/$name" "$bindir/$name" || mv -f "$fresh/$name" "$bindir/$name"
  done
  rm -rf "$fresh"

  if ! stale "$out" "${names[@]/#/$bindir/}" "$bindir/runner" "$bindir/wrongarch" "$ROOT/cmd/tools/samples" "$BUSYBOX" "${BASH_SOURCE[0]}"; then
    log "tools image up to date: $out"
    return 0
  fi
  local files=(-file "$bindir/runner=/toolgate/runner" -file "$BUSYBOX=/bin/busybox:0755"
    -file "$bindir/wrongarch=/testdata/wrongarch:0755")
  for name in "${names[@]}"; do
    files+=(-file "$bindir/$name=/tools/$name:0755")
  done
  local f
  while IFS= read -r f; do
    files+=(-file "$ROOT/cmd/tools/samples/$f=/samples/$f:0644")
  done < <(cd "$ROOT/cmd/tools/samples" && find . -type f -printf '%P\n' | sort)
  imgpack -name "$TOOLS_IMAGE" -user 65532:65532 -workdir /tmp -env PATH=/tools:/bin \
    "${files[@]}" -out "$out"
  log "packed $TOOLS_IMAGE (${names[*]}) -> $out"
}

main "$@"
