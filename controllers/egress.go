package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// EgressProxyPolicyName is the policy that lets Pods of tools with sandbox.egress reach the
// egress proxy and nothing else.
const EgressProxyPolicyName = "toolgate-tools-egress-proxy"

// egressGrantMargin is how long a grant outlives its attempt's deadline: the proxy refuses
// a grant past it, so a body (or a copy of its credential) cannot use it later, even when
// the operator never ended it (recordEgress).
const egressGrantMargin = time.Minute

// egressGrantExpiry is when the grant of an attempt with this deadline expires.
func egressGrantExpiry(deadline time.Time) time.Time { return deadline.Add(egressGrantMargin) }

// maxEgressRecordBytes bounds what the operator reads from the proxy's records endpoint.
const maxEgressRecordBytes = 64 << 10

// EgressProxyOptions point tool Pods at toolgate's egress proxy (cmd/egress-proxy) and the
// operator at its records (--egress-proxy-*).
type EgressProxyOptions struct {
	// URL is the proxy as a tool body reaches it, "http://host:port": a .svc name (needs
	// cluster DNS), the Service's ClusterIP or a node address. Empty: no proxy; a call of
	// a tool with sandbox.egress is refused (NetworkIsolationMissing).
	URL string
	// RecordsURL is the base URL of the proxy's records listener, as the operator reaches it.
	RecordsURL string
	// Key signs each attempt's grant (the proxy's key, at least 32 bytes).
	Key []byte
	// CA is the toolgate egress CA (PEM, --egress-proxy-ca-file) the proxy terminates the
	// TLS of injected hosts with: bodies of tools with an egress credential get it to trust.
	// Empty: such tools are refused (NetworkIsolationMissing).
	CA []byte
	// Namespace and PodLabels select the proxy's Pods in the NetworkPolicy that lets tool
	// Pods reach them (kube-proxy translates a ClusterIP before policies see the packet).
	Namespace string
	PodLabels map[string]string
	// PeerCIDRs are added to that policy's peers: the node address when the proxy is
	// reached there (hostNetwork, NodePort).
	PeerCIDRs []string
	// HTTPClient reads the records; nil: one with a 5 s timeout.
	HTTPClient *http.Client
	// Resolver resolves a URL host that is a name (a .svc name): the Pod gets it as a
	// hostAlias, because its NetworkPolicy allows no DNS (a resolver the body could query
	// would be a way out around the proxy). nil: net.DefaultResolver.
	Resolver egress.Resolver
}

// port is the URL's port (default 80).
func (o EgressProxyOptions) port() (int32, error) {
	u, err := url.Parse(o.URL)
	if err != nil || u.Scheme != "http" || u.Hostname() == "" {
		return 0, fmt.Errorf("egress proxy URL %q: want http://host:port", o.URL)
	}
	if u.Port() == "" {
		return 80, nil
	}
	p, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("egress proxy URL %q: bad port", o.URL)
	}
	return int32(p), nil
}

// Validate checks the options the manager was started with (nothing set is valid: no proxy).
func (o EgressProxyOptions) Validate() error {
	if o.URL == "" {
		return nil
	}
	if _, err := o.port(); err != nil {
		return err
	}
	if len(o.Key) < egress.MinKeyBytes {
		return fmt.Errorf("egress proxy key: %d bytes, want at least %d", len(o.Key), egress.MinKeyBytes)
	}
	if o.Namespace == "" || len(o.PodLabels) == 0 {
		return fmt.Errorf("egress proxy: the proxy's namespace and Pod labels are required (the NetworkPolicy selects its Pods)")
	}
	for _, c := range o.PeerCIDRs {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("egress proxy peer CIDR %q: %w", c, err)
		}
	}
	if len(o.CA) > 0 {
		return checkEgressCA(o.CA)
	}
	return nil
}

// egressUnavailable says why this operator cannot run a tool's egress sandbox (no proxy;
// an injected credential and no egress CA); empty when it can, or the tool has none.
func (o EgressProxyOptions) egressUnavailable(s toolgatev1alpha1.Sandbox) string {
	switch {
	case !podspec.HasEgressAllow(s):
		return ""
	case o.URL == "" || len(o.Key) < egress.MinKeyBytes:
		return "the tool's sandbox.egress needs toolgate's egress proxy, and this operator has none configured (--egress-proxy-url, --egress-proxy-key-file)"
	case podspec.HasEgressCredential(s) && len(o.CA) == 0:
		return "the tool's sandbox.egress.allow[].credential needs the egress proxy's CA, which its body must trust, and this operator has none configured (--egress-proxy-ca-file)"
	}
	return ""
}

// egressProxyURL is the proxy URL one attempt's body gets: the proxy's URL with the
// attempt's signed grant as the password, which carries the headers the proxy injects.
// Empty for a tool without sandbox.egress; why is non-empty when the tool needs what this
// operator does not have (egressUnavailable).
func (o EgressProxyOptions) egressProxyURL(call *toolgatev1alpha1.ToolCall, attempt int32, deadline time.Time, inject []egress.Injection) (proxyURL, why string) {
	spec := call.Status.Tool.Spec
	if why := o.egressUnavailable(spec.Sandbox); why != "" || !podspec.HasEgressAllow(spec.Sandbox) {
		return "", why
	}
	cred, err := egress.Sign(o.Key, o.grant(call, attempt, deadline, inject))
	if err != nil {
		return "", "the egress proxy grant could not be signed: " + err.Error()
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		return "", "the egress proxy URL is invalid: " + err.Error()
	}
	u.User = url.UserPassword(egress.ProxyUser, cred)
	return u.String(), ""
}

// grant is what attempt's body may reach and what the proxy injects into its requests.
func (o EgressProxyOptions) grant(call *toolgatev1alpha1.ToolCall, attempt int32, deadline time.Time, inject []egress.Injection) egress.Grant {
	g := egress.Grant{Namespace: call.Namespace, Call: call.Name, UID: string(call.UID), Attempt: attempt,
		Expires: egressGrantExpiry(deadline).Unix(), Inject: inject}
	for _, r := range call.Status.Tool.Spec.Sandbox.Egress.Allow {
		g.Allow = append(g.Allow, egress.Rule{Host: r.Host, Port: r.Port})
	}
	return g
}

// proxyHostAlias maps the proxy URL's host to its address in the Pod's /etc/hosts when the
// host is a name; nil when it is an address already (a ClusterIP, a node address).
func (o EgressProxyOptions) proxyHostAlias(ctx context.Context) (*corev1.HostAlias, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return nil, err
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err == nil {
		return nil, nil
	}
	res := o.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := res.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no address")
	}
	if err != nil {
		return nil, fmt.Errorf("resolving the egress proxy's host %q: %w", host, err)
	}
	return &corev1.HostAlias{IP: addrs[0].Unmap().String(), Hostnames: []string{host}}, nil
}

// EgressProxyPolicies are the policies a namespace gets for tools with sandbox.egress: Pods
// labelled proxy-only get nothing in, and out only the proxy's Pods (and PeerCIDRs) on
// the proxy's port; no DNS (the proxy resolves names). None when no proxy is configured.
func EgressProxyPolicies(ns string, o EgressProxyOptions) []*networkingv1.NetworkPolicy {
	port, err := o.port()
	if o.URL == "" || err != nil {
		return nil
	}
	peers := []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: o.Namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: o.PodLabels},
	}}
	for _, c := range o.PeerCIDRs {
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
	}
	return []*networkingv1.NetworkPolicy{{
		ObjectMeta: metav1.ObjectMeta{Name: EgressProxyPolicyName, Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: netisolation.ToolPodSelector(podcontract.NetworkProxy),
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To:    peers,
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}},
			}},
		},
	}}
}

// recordEgress ends the grant of attempt n, the call's current one, and reads what the proxy
// saw of it into its status, once, when the attempt ended (tools with sandbox.egress only):
// from then on the proxy refuses the grant (GrantEnded). A proxy that cannot be reached
// costs the call nothing but the record: the attempt's outcome stands, unavailable says
// why, and the grant works until its signed expiry.
func (r *ToolCallReconciler) recordEgress(ctx context.Context, call *toolgatev1alpha1.ToolCall, n int) {
	a := &call.Status.Attempts[n]
	if call.Status.Tool == nil || call.Status.Tool.Spec == nil || !podspec.HasEgressAllow(call.Status.Tool.Spec.Sandbox) || a.Egress != nil {
		return
	}
	// The expiry the grant was signed with: the same deadline, from the attempt's start.
	until := egressGrantExpiry(r.attemptDeadline(call))
	log, err := endEgressGrant(ctx, r.Options.EgressProxy, string(call.UID), a.Attempt, until, a.StartTime)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("egress records unavailable", "attempt", a.Attempt, "error", err.Error())
		msg := "the egress proxy's records could not be read: " + err.Error()
		log = &toolgatev1alpha1.EgressLog{Unavailable: msg[:min(len(msg), 256)]}
	}
	a.Egress = log
}

// endEgressGrant asks the proxy to end an attempt's grant (until its expiry) and answer the
// attempt's final record.
func endEgressGrant(ctx context.Context, o EgressProxyOptions, uid string, attempt int32, until time.Time, started *metav1.Time) (*toolgatev1alpha1.EgressLog, error) {
	if o.RecordsURL == "" || len(o.Key) == 0 {
		return nil, fmt.Errorf("no records URL configured (--egress-proxy-records-url)")
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, egress.EndURL(o.RecordsURL, url.PathEscape(uid), attempt, until), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+egress.RecordsToken(o.Key))
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var rec egress.Record
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxEgressRecordBytes)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	log := egressLog(rec)
	if started != nil && rec.ProxyStarted > started.Unix() {
		log.Unavailable = "the egress proxy restarted during the attempt: what it saw before is lost"
	}
	return log, nil
}

// egressLog converts the proxy's record into status, bounded and checked again: a host is a
// name, an address or "(invalid)", whatever the proxy answered.
func egressLog(rec egress.Record) *toolgatev1alpha1.EgressLog {
	out := &toolgatev1alpha1.EgressLog{Omitted: max(rec.Omitted, 0)}
	for i, d := range rec.Destinations {
		if i >= egress.MaxDestinations {
			out.Omitted += d.Allowed + d.Refused
			continue
		}
		host := egress.InvalidHost
		if n, ok := egress.NormalizeHost(d.Host); ok {
			host = n
		} else if a, err := netip.ParseAddr(d.Host); err == nil {
			host = a.String()
		}
		reason := ""
		if slices.Contains(egress.RefusalReasons(), d.Reason) {
			reason = d.Reason
		}
		out.Destinations = append(out.Destinations, toolgatev1alpha1.EgressDestination{Host: host,
			Port: min(max(d.Port, 0), 65535), Allowed: max(d.Allowed, 0), Refused: max(d.Refused, 0), Reason: reason})
	}
	return out
}
