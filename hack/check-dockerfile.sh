#!/usr/bin/env bash
# Docker is not available here, so the Dockerfile cannot be built in CI. This check keeps it
# honest: every package of the module that cmd/manager and cmd/runner import must be copied
# into the build stage, and the final stage must match what hack/imgpack packs.
set -euo pipefail
cd "$(dirname "$0")/.."
module=github.com/toolgate/toolgate
status=0
sources=$(awk '/^COPY [a-z]/{print $2}' Dockerfile)
for pkg in $(go list -deps ./cmd/manager ./cmd/runner ./cmd/toolgate | grep "^$module/"); do
  dir=${pkg#"$module/"}/
  covered=no
  for src in $sources; do
    case "$dir" in "$src"*) covered=yes ;; esac
  done
  [ "$covered" = yes ] || { echo "Dockerfile: package $dir is not copied into the build stage"; status=1; }
done
for want in 'COPY --from=build /out/manager /manager' 'COPY --from=build /out/runner /toolgate/runner' \
  'USER 65532:65532' 'ENTRYPOINT \["/manager"\]'; do
  grep -q "^$want" Dockerfile || { echo "Dockerfile: missing '$want' (keep in step with hack/imgpack)"; status=1; }
done
exit $status
