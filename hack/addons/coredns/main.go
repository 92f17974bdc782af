//go:build ignore

// Command coredns is the local cluster's DNS: CoreDNS (github.com/coredns/coredns) with only the
// plugins this cluster's Corefile uses, so it builds in a fraction of the full binary's time.
// hack/k8s-binaries.sh copies this file into a wrapper module under bin/k8s-src and builds it
// into bin/k8s (never part of toolgate's module). hack/cluster writes the Corefile and runs it
// as a host process behind the kube-dns Service (docs/local-cluster-limits.md, "Cluster DNS").
package main

import (
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"

	"github.com/coredns/coredns/coremain"
)

func main() {
	coremain.Run()
}
