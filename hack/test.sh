#!/usr/bin/env bash
# make test: every stage, in two lanes that run at once, with one timing line per stage.
#
#   lane 1: verify, test-unit, test-integration (in turn)
#   lane 2: test-e2e (make up when no healthy cluster is up, the real-cluster suite, teardown),
#           then chart-test and test-chaos-short
#
# The real-cluster suite mostly waits (on Pods, on Lease takeovers), so on two cores the
# envtest lane fills its idle time: the two lanes together take little more than the longer
# one (docs/testing.md). What both lanes would otherwise build or install at the same moment
# (tools, the Kubernetes binaries, Chromium from apt, the npm packages, the CLI, Jaeger) is
# prepared first, in turn. Lane 2's output is prefixed "[lane 2] ". A failing stage ends its
# lane; the other lane runs to its end (a cluster test-e2e started is always torn down), and
# make test fails naming every stage that failed.
#
# TEST_LANES=1 runs every stage in turn, as before (lane 1 then lane 2).
set -uo pipefail
cd "$(dirname "$0")/.."

MAKE="${MAKE:-make}"
LANE1=(verify test-unit test-integration)
LANE2=(test-e2e chart-test test-chaos-short)
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT

# run_stages LANE STAGE...: each stage in turn; a line "<stage> <seconds> ok|FAILED" per stage
# run into $results/LANE; stops at the first failure.
run_stages() {
  local lane="$1" stage start took
  shift
  for stage in "$@"; do
    start=$SECONDS
    if $MAKE --no-print-directory "$stage"; then
      took=$((SECONDS - start))
      echo "$stage ${took} ok" >>"$results/$lane"
      echo "make test: $stage took ${took}s"
    else
      took=$((SECONDS - start))
      echo "$stage ${took} FAILED" >>"$results/$lane"
      echo "make test: $stage FAILED after ${took}s"
      return 1
    fi
  done
}

start=$SECONDS
echo "make test: preparing what both lanes use (tools, Kubernetes binaries, Chromium, npm packages, CLI)"
prep=(tools helm cli chromium ts-sdk ts-client cluster-binaries)
if [ "${TRACING:-}" = 1 ]; then prep+=(jaeger); fi
if ! $MAKE --no-print-directory "${prep[@]}"; then
  echo "make test: preparing FAILED after $((SECONDS - start))s"
  exit 1
fi
echo "make test: prepare took $((SECONDS - start))s"

if [ "${TEST_LANES:-2}" = 1 ]; then
  run_stages lane1 "${LANE1[@]}" && run_stages lane2 "${LANE2[@]}"
else
  # Lane 2 in the background, its lines prefixed as they come (sed -u: line-buffered).
  (run_stages lane2 "${LANE2[@]}" 2>&1 | sed -u 's/^/[lane 2] /') &
  lane2=$!
  run_stages lane1 "${LANE1[@]}"
  wait "$lane2"
fi

summary="" failed=""
for lane in lane1 lane2; do
  [ -f "$results/$lane" ] || continue
  while read -r stage took state; do
    summary+=" $stage ${took}s"
    [ "$state" = ok ] || failed+=" $stage"
  done <"$results/$lane"
done
wall=$((SECONDS - start))
if [ -n "$failed" ] || [ "$(cat "$results"/lane* 2>/dev/null | wc -l)" -ne $((${#LANE1[@]} + ${#LANE2[@]})) ]; then
  echo "make test: FAILED:${failed:- (a stage did not run)} (ran:$summary; ${wall}s in all)"
  exit 1
fi
echo "make test: passed:$summary (${wall}s in all, prepare included)"
