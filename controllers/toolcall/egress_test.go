package toolcall

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/egressgrant/egressgranttest"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func egressTestOptions() egressgrant.ProxyOptions {
	return egressgrant.ProxyOptions{URL: egressgranttest.ProxyURL, Key: egressgranttest.Key, Namespace: egressgranttest.ProxyNamespace,
		PodLabels: egressgranttest.ProxyLabels()}
}

var withEgress = egressgranttest.WithEgress

// grantedProxyURL is the proxy URL attempt's body gets (why: the call is refused instead).
func grantedProxyURL(t *testing.T, o egressgrant.ProxyOptions, call *toolgatev1alpha1.ToolCall, attempt int32, deadline time.Time) (url, why string) {
	t.Helper()
	px, why, ended, err := o.ForAttempt(context.Background(), nil, call, attempt, deadline)
	if ended != nil || err != nil {
		t.Fatalf("ended %+v, err %v", ended, err)
	}
	return px.URL, why
}

// A tool with sandbox.egress gets a Pod labelled for the proxy-only policy and the proxy
// URL whose password is a grant for exactly this call, attempt and allow list.
func TestEgressProxyJob(t *testing.T) {
	in := testJobInput(withEgress)
	in.Call.Status.Tool = &toolgatev1alpha1.ToolSnapshot{Spec: in.Tool}
	deadline := time.Unix(2_000_000, 0)
	proxyURL, why := grantedProxyURL(t, egressTestOptions(), in.Call, 2, deadline)
	if why != "" {
		t.Fatal(why)
	}
	in.EgressProxyURL = proxyURL
	job := podspec.BuildJob(in, podspec.DefaultOptions())
	if got := job.Spec.Template.Labels[podcontract.LabelNetwork]; got != podcontract.NetworkProxy {
		t.Errorf("network label %q, want %q", got, podcontract.NetworkProxy)
	}
	env := map[string]string{}
	for _, e := range toolIn(job.Spec.Template.Spec).Env {
		env[e.Name] = e.Value
	}
	for _, name := range []string{podcontract.EnvHTTPSProxy, podcontract.EnvHTTPProxy, podcontract.EnvHTTPSProxyLower, podcontract.EnvHTTPProxyLower} {
		if env[name] != proxyURL {
			t.Errorf("%s = %q, want the proxy URL", name, env[name])
		}
	}
	u, err := url.Parse(proxyURL)
	if err != nil || u.Host != "10.0.0.50:3128" || u.User.Username() != egress.ProxyUser {
		t.Fatalf("proxy URL %q: %v", proxyURL, err)
	}
	pass, _ := u.User.Password()
	g, err := egress.Verify(egressgranttest.Key, pass, deadline)
	if err != nil {
		t.Fatal(err)
	}
	want := egress.Grant{Namespace: "agents", Call: "hello", UID: "call-uid", Attempt: 2,
		Allow: []egress.Rule{{Host: "allowed.test", Port: 443}}, Expires: egressgrant.GrantExpiry(deadline).Unix()}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("grant (-want +got):\n%s", diff)
	}

	// Egress without allow and None keep their labels and get no proxy.
	for _, mut := range []func(*toolgatev1alpha1.ToolSpec){nil, func(s *toolgatev1alpha1.ToolSpec) { s.Sandbox.Network = toolgatev1alpha1.NetworkEgress }} {
		plain := testJobInput(mut)
		plain.Call.Status.Tool = &toolgatev1alpha1.ToolSnapshot{Spec: plain.Tool}
		if u, why := grantedProxyURL(t, egressTestOptions(), plain.Call, 1, deadline); u != "" || why != "" {
			t.Errorf("a tool without sandbox.egress got proxy %q / %q", u, why)
		}
		if l := podspec.BuildJob(plain, podspec.DefaultOptions()).Spec.Template.Labels[podcontract.LabelNetwork]; l == podcontract.NetworkProxy {
			t.Errorf("a tool without sandbox.egress is labelled %q", l)
		}
	}
	// No proxy configured: the call is refused, not run with open egress.
	if _, why := grantedProxyURL(t, egressgrant.ProxyOptions{}, in.Call, 1, deadline); !strings.Contains(why, "--egress-proxy-url") {
		t.Errorf("no proxy: why = %q", why)
	}
}

func TestEgressProxyPolicy(t *testing.T) {
	o := egressTestOptions()
	o.PeerCIDRs = []string{"192.0.2.2/32"}
	ps := egressgrant.ProxyPolicies("agents", o, netisolation.ToolPodSelector(podcontract.NetworkProxy))
	if len(ps) != 1 {
		t.Fatalf("%d policies", len(ps))
	}
	p := ps[0]
	if p.Name != egressgrant.ProxyPolicyName || p.Spec.PodSelector.MatchLabels[podcontract.LabelNetwork] != podcontract.NetworkProxy ||
		len(p.Spec.Ingress) != 0 || len(p.Spec.Egress) != 1 || len(p.Spec.PolicyTypes) != 2 {
		t.Fatalf("policy %+v", p.Spec)
	}
	rule := p.Spec.Egress[0]
	if len(rule.Ports) != 1 || rule.Ports[0].Port.IntValue() != 3128 || *rule.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v: want TCP 3128 only (no DNS)", rule.Ports)
	}
	if len(rule.To) != 2 || rule.To[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "toolgate-system" ||
		rule.To[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "toolgate-egress-proxy" || rule.To[1].IPBlock.CIDR != "192.0.2.2/32" {
		t.Errorf("peers %+v", rule.To)
	}
	if egressgrant.ProxyPolicies("agents", egressgrant.ProxyOptions{}, netisolation.ToolPodSelector(podcontract.NetworkProxy)) != nil {
		t.Error("a policy without a proxy")
	}

	// Ensure mode: the proxy Pod is isolated by toolgate's policies, and another policy
	// that adds egress (DNS for every Pod, say) opens it.
	pod := map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue, podcontract.LabelNetwork: podcontract.NetworkProxy}
	ours := []networkingv1.NetworkPolicy{*p}
	for _, q := range netisolation.ToolNetworkPolicies("agents", netisolation.DefaultEgressExcept()) {
		ours = append(ours, *q)
	}
	owned := []string{netisolation.EgressOnlyPolicyName, egressgrant.ProxyPolicyName}
	if gap := netisolation.Gap(toolgatev1alpha1.NetworkEgress, pod, ours, owned); gap != "" {
		t.Errorf("toolgate's own policies: gap %q", gap)
	}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	dns := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Spec: networkingv1.NetworkPolicySpec{
		PolicyTypes: both, Egress: []networkingv1.NetworkPolicyEgressRule{{}}}}
	if gap := netisolation.Gap(toolgatev1alpha1.NetworkEgress, pod, append(ours, dns), owned); !strings.Contains(gap, "dns allows egress") {
		t.Errorf("another egress policy: gap %q", gap)
	}
	if gap := netisolation.Gap(toolgatev1alpha1.NetworkEgress, pod, ours[1:], owned); gap == "" {
		t.Error("without the proxy policy the Pod counted as isolated")
	}
}

// The operator ends the attempt's grant and reads the proxy's record in one request with
// the records token (until: the expiry the grant was signed with), and checks the record
// again: a host that is no name becomes "(invalid)", an unknown reason is dropped, more
// than 32 destinations are omitted.
func TestRecordEgress(t *testing.T) {
	rec := egress.Record{Destinations: []egress.Destination{
		{Host: "allowed.test", Port: 443, Allowed: 2},
		{Host: "other.test", Port: 443, Refused: 1, Reason: egress.RefusedNotAllowed},
		{Host: "\x1b[31mred", Port: 443, Refused: 1, Reason: "\x1b[0m"},
		{Host: "10.0.0.1", Port: 443, Refused: 1, Reason: egress.RefusedIPLiteral},
		{Host: "busy.test", Port: 443, Allowed: 40, Refused: 7, Reason: egress.RefusedRateLimited},
		{Host: "sni.test", Port: 443, Allowed: 1, Refused: 1, Reason: egress.RefusedSNIMismatch},
		{Host: "ended.test", Port: 80, Refused: 2, Reason: egress.RefusedGrantEnded},
	}}
	for i := range egress.MaxDestinations {
		rec.Destinations = append(rec.Destinations, egress.Destination{Host: "x" + strings.Repeat("a", i) + ".test", Port: 1, Allowed: 1})
	}
	var gotAuth, gotUntil string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotUntil = r.Header.Get("Authorization"), r.URL.Query().Get("until")
		if r.Method != http.MethodPost || r.URL.Path != "/records/call-uid/1/end" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(rec)
	}))
	defer srv.Close()
	o := egressTestOptions()
	o.RecordsURL = srv.URL
	now := time.Unix(2_000_000, 0)
	r := (&Reconciler{Clock: clocktesting.NewFakeClock(now), Options: options.Call{EgressProxy: o, DeadlineGrace: 30 * time.Second}}).wire()
	in := testJobInput(withEgress)
	call := in.Call
	call.Status.Tool = &toolgatev1alpha1.ToolSnapshot{Spec: in.Tool}
	started := &metav1.Time{Time: now.Add(-10 * time.Second)}
	call.Status.Attempts = []toolgatev1alpha1.Attempt{{Attempt: 1, StartTime: started, CompletionTime: &metav1.Time{}}}
	signed := egressgrant.GrantExpiry(executor.AttemptDeadline(call, started.Time, r.Options.DeadlineGrace)).Unix()
	r.features().AfterEnd(context.Background(), call, 0)
	got := call.Status.Attempts[0].Egress
	if gotAuth != "Bearer "+egress.RecordsToken(egressgranttest.Key) {
		t.Errorf("Authorization %q", gotAuth)
	}
	if gotUntil != strconv.FormatInt(signed, 10) {
		t.Errorf("until %q, want the grant's signed expiry %d", gotUntil, signed)
	}
	if got == nil || len(got.Destinations) != egress.MaxDestinations || got.Omitted != 7 || got.Unavailable != "" {
		t.Fatalf("egress log %+v", got)
	}
	want := []toolgatev1alpha1.EgressDestination{
		{Host: "allowed.test", Port: 443, Allowed: 2},
		{Host: "other.test", Port: 443, Refused: 1, Reason: egress.RefusedNotAllowed},
		{Host: egress.InvalidHost, Port: 443, Refused: 1},
		{Host: "10.0.0.1", Port: 443, Refused: 1, Reason: egress.RefusedIPLiteral},
		{Host: "busy.test", Port: 443, Allowed: 40, Refused: 7, Reason: egress.RefusedRateLimited},
		{Host: "sni.test", Port: 443, Allowed: 1, Refused: 1, Reason: egress.RefusedSNIMismatch},
		{Host: "ended.test", Port: 80, Refused: 2, Reason: egress.RefusedGrantEnded},
	}
	if diff := cmp.Diff(want, got.Destinations[:7]); diff != "" {
		t.Errorf("destinations (-want +got):\n%s", diff)
	}

	// Read once: a second pass keeps what the first read.
	srv.Close()
	r.features().AfterEnd(context.Background(), call, 0)
	if call.Status.Attempts[0].Egress != got {
		t.Error("the record was read again")
	}
	// A proxy that started after the attempt: the record is marked incomplete.
	rec.ProxyStarted = time.Now().Unix()
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(rec) }))
	defer srv2.Close()
	r.Options.EgressProxy.RecordsURL = srv2.URL
	rebuildFeatures(r)
	call.Status.Attempts[0].Egress = nil
	call.Status.Attempts[0].StartTime = &metav1.Time{Time: time.Now().Add(-time.Minute)}
	r.features().AfterEnd(context.Background(), call, 0)
	if u := call.Status.Attempts[0].Egress; u == nil || !strings.Contains(u.Unavailable, "restarted") || len(u.Destinations) == 0 {
		t.Errorf("a restarted proxy: %+v", u)
	}
	r.Options.EgressProxy.RecordsURL = srv.URL
	rebuildFeatures(r)

	// A proxy that cannot be read: the attempt says so.
	call.Status.Attempts[0].Egress = nil
	r.features().AfterEnd(context.Background(), call, 0)
	if u := call.Status.Attempts[0].Egress; u == nil || !strings.Contains(u.Unavailable, "could not be read") || len(u.Unavailable) > 256 {
		t.Errorf("unreachable proxy: %+v", u)
	}
}

// The proxy's host alias (a proxy URL with a name: its policy allows no DNS) is in the
// Pod's /etc/hosts.
func TestEgressProxyHostAliasInPod(t *testing.T) {
	in := testJobInput(withEgress)
	in.EgressProxyAlias = &corev1.HostAlias{IP: "10.0.0.12", Hostnames: []string{"toolgate-egress-proxy.toolgate-system.svc"}}
	if got := podspec.BuildJob(in, podspec.DefaultOptions()).Spec.Template.Spec.HostAliases; len(got) != 1 || got[0].IP != "10.0.0.12" {
		t.Errorf("Pod hostAliases %+v", got)
	}
}

// rebuildFeatures makes r build its features again, from its options as a test changed them.
func rebuildFeatures(r *Reconciler) {
	r.featureOnce, r.featureList = sync.Once{}, nil
}
