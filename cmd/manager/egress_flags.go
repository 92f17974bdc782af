package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/toolgate/toolgate/controllers/egressgrant"
)

// egressFlags are the --egress-proxy-* flags: where tool bodies reach the egress proxy,
// where the operator reads its records, the key both share, and how the NetworkPolicy
// finds the proxy's Pods.
type egressFlags struct {
	url, recordsURL, keyFile, caFile, namespace, podLabels, peerCIDRs string
}

func bindEgressProxy(fs *flag.FlagSet) *egressFlags {
	f := &egressFlags{}
	fs.StringVar(&f.url, "egress-proxy-url", "", "the egress proxy as tool bodies reach it, http://host:port: a .svc name (needs cluster DNS), its Service's ClusterIP or a node address; empty: tools with sandbox.egress are refused")
	fs.StringVar(&f.recordsURL, "egress-proxy-records-url", "", "base URL of the egress proxy's records listener, as the operator reaches it (e.g. http://<ClusterIP>:3129)")
	fs.StringVar(&f.keyFile, "egress-proxy-key-file", "", "file holding the key the operator signs each attempt's egress grant with (the proxy's --key-file; at least 32 bytes)")
	fs.StringVar(&f.caFile, "egress-proxy-ca-file", "", "PEM file of the toolgate egress CA the proxy terminates the TLS of injected hosts with (tools with sandbox.egress.allow[].credential get it to trust; without it they are refused)")
	fs.StringVar(&f.namespace, "egress-proxy-namespace", "", "namespace of the egress proxy's Pods (the NetworkPolicy of tools with sandbox.egress lets them reach those Pods only)")
	fs.StringVar(&f.podLabels, "egress-proxy-pod-labels", "app.kubernetes.io/name=toolgate,app.kubernetes.io/component=egress-proxy", "labels of the egress proxy's Pods, k=v,k=v")
	fs.StringVar(&f.peerCIDRs, "egress-proxy-peer-cidrs", "", "comma-separated CIDRs tools with sandbox.egress may also reach on the proxy's port: the node address when the proxy is reached there")
	return f
}

func (f *egressFlags) options() (egressgrant.ProxyOptions, error) {
	o := egressgrant.ProxyOptions{URL: f.url, RecordsURL: f.recordsURL, Namespace: f.namespace}
	if f.url == "" {
		return o, nil
	}
	if f.keyFile == "" {
		return o, fmt.Errorf("--egress-proxy-key-file is required with --egress-proxy-url")
	}
	key, err := os.ReadFile(f.keyFile)
	if err != nil {
		return o, fmt.Errorf("egress proxy key: %w", err)
	}
	o.Key = []byte(strings.TrimSpace(string(key)))
	if f.caFile != "" {
		if o.CA, err = os.ReadFile(f.caFile); err != nil {
			return o, fmt.Errorf("egress proxy CA: %w", err)
		}
	}
	set, err := labels.ConvertSelectorToLabelsMap(f.podLabels)
	if err != nil {
		return o, fmt.Errorf("--egress-proxy-pod-labels: %w", err)
	}
	o.PodLabels = set
	for _, c := range strings.Split(f.peerCIDRs, ",") {
		if c = strings.TrimSpace(c); c != "" {
			o.PeerCIDRs = append(o.PeerCIDRs, c)
		}
	}
	return o, o.Validate()
}
