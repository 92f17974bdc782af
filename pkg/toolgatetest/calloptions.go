package toolgatetest

import (
	"net/http"
	"time"

	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/pkg/egress"
)

// CallOptions change the operator's ToolCall settings from those cmd/manager ships with;
// a zero field keeps the shipped default. They are the kit's own, so that a suite outside
// this module sets them without naming the operator's packages (the kit converts them).
type CallOptions struct {
	// JobRetention is how long a Job (and its Pod) is kept after its attempt's outcome was
	// recorded (--job-retention).
	JobRetention time.Duration
	// NetworkPolicy is how sandbox.network is made real (--network-policy): "ensure" (the
	// default), "require" (only refuse calls the namespace's policies do not isolate) or
	// "off".
	NetworkPolicy string
	// HistorySucceeded and HistoryFailed keep at most that many Succeeded, and Failed or
	// Denied, calls per namespace (--toolcall-history-succeeded, --toolcall-history-failed);
	// zero: no limit.
	HistorySucceeded, HistoryFailed int
	// AuditIncludeContent puts the arguments and the result into each audit record
	// (--audit-include-content).
	AuditIncludeContent bool
	// EgressProxy points tools with sandbox.egress at an egress proxy (--egress-proxy-*);
	// an empty URL: none, and such tools' calls are refused.
	EgressProxy EgressProxy
	// AdmissionQueue, AdmissionMaxWait and MaxConcurrentStarts put Jobs behind a Kueue
	// LocalQueue or the operator's start bound (--admission-queue, --admission-max-wait,
	// --max-concurrent-starts); zero: the shipped defaults (none, 10m, unbounded).
	AdmissionQueue      string
	AdmissionMaxWait    time.Duration
	MaxConcurrentStarts int
}

// EgressProxy is where tool bodies reach the egress proxy and the operator its records.
type EgressProxy struct {
	// URL is the proxy as a tool body reaches it, "http://host:port".
	URL string
	// RecordsURL is the base URL of the proxy's records listener, as the operator reaches it.
	RecordsURL string
	// Key signs each attempt's grant (the proxy's key, at least 32 bytes).
	Key []byte
	// CA is the egress CA (PEM) the proxy terminates injected hosts' TLS with; empty: tools
	// with an egress credential are refused.
	CA []byte
	// Namespace and PodLabels select the proxy's Pods in the tools' NetworkPolicy.
	Namespace string
	PodLabels map[string]string
	// PeerCIDRs are added to that policy's peers (a proxy reached on a node address).
	PeerCIDRs []string
	// HTTPClient reads the records; nil: one with a 5 s timeout.
	HTTPClient *http.Client
	// Resolver resolves a URL host that is a name; nil: net.DefaultResolver.
	Resolver egress.Resolver
}

// operator is o as the operator's settings: its shipped defaults with o's changes.
func (o CallOptions) operator() (controllers.CallOptions, error) {
	c := controllers.DefaultCallOptions()
	if o.JobRetention != 0 {
		c.JobRetention = o.JobRetention
	}
	if o.NetworkPolicy != "" {
		mode, err := netisolation.ParseMode(o.NetworkPolicy)
		if err != nil {
			return c, err
		}
		c.NetworkPolicy.Mode = mode
	}
	c.Retention.HistorySucceeded, c.Retention.HistoryFailed = o.HistorySucceeded, o.HistoryFailed
	c.Retention.AuditIncludeContent = o.AuditIncludeContent
	c.Admission.Queue, c.Admission.MaxConcurrentStarts = o.AdmissionQueue, o.MaxConcurrentStarts
	if o.AdmissionMaxWait != 0 {
		c.Admission.MaxWait = o.AdmissionMaxWait
	}
	p := o.EgressProxy
	c.EgressProxy = egressgrant.ProxyOptions{URL: p.URL, RecordsURL: p.RecordsURL, Key: p.Key, CA: p.CA,
		Namespace: p.Namespace, PodLabels: p.PodLabels, PeerCIDRs: p.PeerCIDRs, HTTPClient: p.HTTPClient, Resolver: p.Resolver}
	return c, nil
}
