#!/usr/bin/env bash
# Builds cmd/egress-proxy (static Go) and packs it alone as toolgate.local/egress-proxy:dev
# -> bin/images/egress-proxy.tar (/egress-proxy, user 65532:65532), the way the runner image
# is packed (hack/cluster/prereqs.sh pack_binary, hack/imgpack). Run by `make images-egress-proxy`
# and hack/up.sh; `hack/cluster.sh load` imports it with the other images.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/cluster/lib.sh
. "$here/cluster/lib.sh"
# shellcheck source=SCRIPTDIR/cluster/prereqs.sh
. "$here/cluster/prereqs.sh"

mkdir -p "$IMAGES_DIR/bin"
pack_binary egress-proxy ./cmd/egress-proxy /egress-proxy always
