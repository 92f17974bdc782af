#!/usr/bin/env bash
# Builds Jaeger (all-in-one: OTLP receiver on :4317/:4318, query API and UI on :16686) from Go
# modules into bin/jaeger, and runs it on this machine for the local cluster's traces.
#
#   hack/jaeger/jaeger.sh build     build bin/jaeger unless it is present for this version (cached)
#   hack/jaeger/jaeger.sh start     build, then start it (pid in .cluster/run/jaeger.pid, log in
#                            .cluster/logs/jaeger.log) unless it already answers
#   hack/jaeger/jaeger.sh stop      stop the one start started
#   hack/jaeger/jaeger.sh status    exit 0 when the query API answers
#
# The version comes from hack/tools/jaeger/go.mod (a module of its own, `go get -tool`, so
# Jaeger's dependencies never enter toolgate's go.mod). Configuration: hack/jaeger/config.yaml
# (memory storage: traces are lost when it stops; OTLP on all interfaces, JAEGER_OTLP_HOST,
# so that Pods reach it at the node address; query API and UI on loopback only).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
mod="$root/hack/tools/jaeger"
out="${JAEGER_BIN:-$root/bin/jaeger}"
run="$root/.cluster/run"
logs="$root/.cluster/logs"
query_port="${JAEGER_QUERY_PORT:-16686}"

# shellcheck source=hack/lib/toolmod.sh
. "$root/hack/lib/toolmod.sh"

version() { toolmod_version "$mod" github.com/jaegertracing/jaeger; }

build() {
  toolmod_build jaeger "$mod" "$(version)" "$out" -ldflags "-s -w" github.com/jaegertracing/jaeger/cmd/jaeger
}

healthy() {
  curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$query_port/api/services"
}

start() {
  build
  if healthy; then echo "jaeger: already running"; return; fi
  mkdir -p "$run" "$logs"
  JAEGER_OTLP_HOST="${JAEGER_OTLP_HOST:-0.0.0.0}" JAEGER_QUERY_PORT="$query_port" \
    setsid "$out" --config "$root/hack/jaeger/config.yaml" >"$logs/jaeger.log" 2>&1 </dev/null &
  echo $! >"$run/jaeger.pid"
  local i
  for i in $(seq 1 150); do
    healthy && { echo "jaeger: up (query http://127.0.0.1:$query_port, OTLP :4317 :4318)"; return; }
    kill -0 "$(cat "$run/jaeger.pid")" 2>/dev/null || { tail -30 "$logs/jaeger.log"; exit 1; }
    sleep 0.2
  done
  tail -30 "$logs/jaeger.log"
  echo "jaeger: not healthy after 30s" >&2
  exit 1
}

stop() {
  local pidfile="$run/jaeger.pid" pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" || true
  fi
  rm -f "$pidfile"
}

case "${1:-build}" in
  build) build ;;
  start) start ;;
  stop) stop ;;
  status) healthy ;;
  *) echo "usage: $0 build|start|stop|status" >&2; exit 2 ;;
esac
