// Package egressgrant is the egress proxy as the operator uses it for one attempt of a tool
// with sandbox.egress: the grant it signs for the attempt (what the body may reach, the
// headers the proxy injects, until when), the proxy URL, host alias and CA the attempt's Pod
// gets, the binding of the grant to the Pod's address, the end of the grant and the record
// of what the proxy saw, and the NetworkPolicy that lets proxy-only Pods reach the proxy.
package egressgrant

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/egress"
)

// grantMargin is how long a grant outlives its attempt's deadline: the proxy refuses a
// grant past it, so a body (or a copy of its credential) cannot use it later, even when the
// operator never ended it (EndGrant).
const grantMargin = time.Minute

// GrantExpiry is when the grant of an attempt with this deadline expires.
func GrantExpiry(deadline time.Time) time.Time { return deadline.Add(grantMargin) }

// Uses reports whether the call's tool goes out through the egress proxy (sandbox.egress
// with an allow list, in the call's tool snapshot).
func Uses(call *toolgatev1alpha1.ToolCall) bool {
	return call.Status.Tool != nil && call.Status.Tool.Spec != nil && podspec.HasEgressAllow(call.Status.Tool.Spec.Sandbox)
}

// ProxyOptions point tool Pods at toolgate's egress proxy (cmd/egress-proxy) and the
// operator at its records (--egress-proxy-*).
type ProxyOptions struct {
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
func (o ProxyOptions) port() (int32, error) {
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
func (o ProxyOptions) Validate() error {
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
		return checkCA(o.CA)
	}
	return nil
}

// Unavailable says why this operator cannot run a tool's egress sandbox (no proxy;
// an injected credential and no egress CA); empty when it can, or the tool has none.
func (o ProxyOptions) Unavailable(s toolgatev1alpha1.Sandbox) string {
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

// proxyURL is the proxy URL one attempt's body gets: the proxy's URL with the
// attempt's signed grant as the password, which carries the headers the proxy injects.
// Empty for a tool without sandbox.egress; why is non-empty when the tool needs what this
// operator does not have (Unavailable).
func (o ProxyOptions) proxyURL(call *toolgatev1alpha1.ToolCall, attempt int32, deadline time.Time, inject []egress.Injection) (proxyURL, why string) {
	spec := call.Status.Tool.Spec
	if why := o.Unavailable(spec.Sandbox); why != "" || !podspec.HasEgressAllow(spec.Sandbox) {
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
func (o ProxyOptions) grant(call *toolgatev1alpha1.ToolCall, attempt int32, deadline time.Time, inject []egress.Injection) egress.Grant {
	g := egress.Grant{Namespace: call.Namespace, Call: call.Name, UID: string(call.UID), Attempt: attempt,
		Expires: GrantExpiry(deadline).Unix(), Inject: inject}
	for _, r := range call.Status.Tool.Spec.Sandbox.Egress.Allow {
		g.Allow = append(g.Allow, egress.Rule{Host: r.Host, Port: r.Port})
	}
	return g
}

// proxyHostAlias maps the proxy URL's host to its address in the Pod's /etc/hosts when the
// host is a name; nil when it is an address already (a ClusterIP, a node address).
func (o ProxyOptions) proxyHostAlias(ctx context.Context) (*corev1.HostAlias, error) {
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
