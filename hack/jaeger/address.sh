#!/usr/bin/env bash
# The collector address tool Pods export their own spans to on the local cluster
# (make up TRACING=1: the chart's tracing.toolEndpoint).
#
#   hack/jaeger/address.sh up      put the address on this machine and print the endpoint URL
#   hack/jaeger/address.sh down    remove it again (hack/cluster.sh down does it)
#
# Jaeger listens on every interface of this machine, but an Egress tool must reach no
# address of the machine: the node address is in the egress policy's except list
# (networkPolicy.egress.clusterCIDRs), and 10.0.0.0/8, 127.0.0.0/8 and the other private
# ranges are in its defaults. So the tools get an address of their own, as a collector
# outside the cluster would have: TOOLGATE_OTLP_IP (default 198.51.100.1, TEST-NET-2 of
# RFC 5737: documentation only, routed nowhere, so taking it hides no real host; outside
# every default except range) on the loopback interface, /32. A Pod's packets to it go
# through the bridge's gateway (this machine) into INPUT, where the NetworkPolicy guard
# (hack/netpol) queues them to kube-network-policies, which applies the Pod's policy
# (ipBlock 0.0.0.0/0 except …): Egress allows it, None drops it. The filter chain
# TOOLGATE-OTLP then lets Pods reach only the OTLP/HTTP port there (4318): the address is
# "the collector's host", not a back door to the API server on :6443.
#
# The address must not be on a network this machine is attached to (TEST-NET-1,
# 192.0.2.0/24, is this machine's own network on some hosts, gateway included): `up`
# refuses an address whose route has no gateway. `up` records an address it added in
# .cluster/host/otlp-address; `down` removes only that one (the chain goes with the
# cluster's iptables clean-up, and here too).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/../cluster/lib.sh
. "$here/../cluster/lib.sh"

OTLP_IP="${TOOLGATE_OTLP_IP:-198.51.100.1}"
OTLP_PORT=4318
OTLP_CHAIN=TOOLGATE-OTLP
RECORD="$HOSTREC/otlp-address"

up() {
  local route ipt=(iptables -w)
  route="$(ip -4 route get "$OTLP_IP" 2>/dev/null | head -1)" || die "no route to $OTLP_IP"
  if [[ "$route" != local\ * ]]; then
    [[ "$route" == *" via "* ]] ||
      die "$OTLP_IP is on a network of this machine ($route): set TOOLGATE_OTLP_IP to an address reached only through a gateway"
    ip addr add "$OTLP_IP/32" dev lo
    mkdir -p "$HOSTREC"
    echo "$OTLP_IP" >"$RECORD"
    log "added $OTLP_IP/32 to lo (the tools' OTLP collector address)" >&2
  fi
  "${ipt[@]}" -N "$OTLP_CHAIN" 2>/dev/null || "${ipt[@]}" -F "$OTLP_CHAIN"
  "${ipt[@]}" -A "$OTLP_CHAIN" -p tcp --dport "$OTLP_PORT" -j RETURN
  "${ipt[@]}" -A "$OTLP_CHAIN" -j DROP
  "${ipt[@]}" -C INPUT -s "$POD_CIDR" -d "$OTLP_IP/32" -j "$OTLP_CHAIN" 2>/dev/null ||
    "${ipt[@]}" -I INPUT 1 -s "$POD_CIDR" -d "$OTLP_IP/32" -j "$OTLP_CHAIN"
  echo "http://$OTLP_IP:$OTLP_PORT"
}

down() {
  local ip rule ipt=(iptables -w)
  while read -r rule; do
    # shellcheck disable=SC2086 # the rule is a list of words
    [ -n "$rule" ] && "${ipt[@]}" -D ${rule#-A } 2>/dev/null || true
  done < <("${ipt[@]}" -S INPUT 2>/dev/null | grep -e "-j $OTLP_CHAIN\$" || true)
  { "${ipt[@]}" -F "$OTLP_CHAIN" && "${ipt[@]}" -X "$OTLP_CHAIN"; } 2>/dev/null || true
  [ -f "$RECORD" ] || return 0
  ip="$(cat "$RECORD")"
  ip addr del "$ip/32" dev lo 2>/dev/null || true
  rm -f "$RECORD"
  log "removed $ip/32 from lo"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
