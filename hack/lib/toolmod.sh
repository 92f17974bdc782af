# shellcheck shell=bash
# A binary built from a tools module of its own (hack/tools/NAME/go.mod, `go get -tool`, so its
# dependencies never enter toolgate's go.mod) and cached next to it with the version it was
# built for: rebuilt only when the pinned version or go.sum changes. Sourced by
# hack/addons/gvisor.sh and hack/jaeger/jaeger.sh (hack/addons/kueue.sh has its own copy).

# toolmod_version MODDIR MODULE: the version of MODULE pinned in MODDIR's go.mod, plus a digest
# of its go.sum.
toolmod_version() {
  local v
  v="$(cd "$1" && go list -m -f '{{.Version}}' "$2")"
  echo "$v+$(sha256sum "$1/go.sum" | cut -c1-12)"
}

# toolmod_build LABEL MODDIR VERSION OUT GOBUILDARGS...: `go build GOBUILDARGS -o OUT` in MODDIR
# (static, -trimpath) unless OUT is there, built for VERSION (OUT.version).
toolmod_build() {
  local label="$1" mod="$2" ver="$3" out="$4" start=$SECONDS
  shift 4
  if [ -x "$out" ] && [ "$(cat "$out.version" 2>/dev/null)" = "$ver" ]; then
    echo "$label: $ver present"
    return
  fi
  echo "$label: building $ver (first time: minutes)"
  mkdir -p "$(dirname "$out")"
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -o "$out.tmp" "$@")
  mv -f "$out.tmp" "$out"
  echo "$ver" >"$out.version"
  echo "$label: built in $((SECONDS - start))s"
}
