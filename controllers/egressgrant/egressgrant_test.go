package egressgrant

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/egressgrant/egressgranttest"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/egress"
)

func testOptions() ProxyOptions {
	return ProxyOptions{URL: egressgranttest.ProxyURL, Key: egressgranttest.Key, Namespace: egressgranttest.ProxyNamespace,
		PodLabels: egressgranttest.ProxyLabels()}
}

// testCall is call hello of namespace agents, attempt 1 of its tool with spec as mut makes it.
func testCall(mut func(*toolgatev1alpha1.ToolSpec)) *toolgatev1alpha1.ToolCall {
	spec := &toolgatev1alpha1.ToolSpec{Timeout: &metav1.Duration{Duration: 90 * time.Second}}
	if mut != nil {
		mut(spec)
	}
	return &toolgatev1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "agents", UID: "call-uid"},
		Status: toolgatev1alpha1.ToolCallStatus{Tool: &toolgatev1alpha1.ToolSnapshot{Spec: spec},
			Attempts: []toolgatev1alpha1.Attempt{{Attempt: 1, StartTime: &metav1.Time{Time: time.Unix(1_000_000, 0)}}}}}
}

// The operator reads each credential's value from the call's namespace and puts the whole
// header into the grant: scheme and value, or the value alone; the header defaults to
// Authorization; the value is trimmed (a Secret made from a file ends in a newline).
func TestInjections(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(egressgranttest.Secret(map[string]string{"token": egressgranttest.Token + "\n", "key": "k-0123456789"})).Build()
	got, ended, err := injections(context.Background(), c, testCall(egressgranttest.WithInjection), 1)
	if err != nil || ended != nil {
		t.Fatalf("err %v, ended %+v", err, ended)
	}
	want := []egress.Injection{
		{Host: "allowed.test", Port: 443, Header: "Authorization", Value: "Bearer " + egressgranttest.Token},
		{Host: "keyed.test", Port: 8443, Header: "X-Api-Key", Value: "k-0123456789"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("injections (-want +got):\n%s", diff)
	}
	deadline := time.Unix(2_000_000, 0)
	g := testOptions().grant(testCall(egressgranttest.WithInjection), 1, deadline, got)
	if diff := cmp.Diff(want, g.Inject); diff != "" {
		t.Errorf("grant's injections (-want +got):\n%s", diff)
	}
}

// A credential the operator cannot inject ends the attempt as a body credential would:
// CredentialMissing or CredentialTooShort, the Secret and key named, the value never.
func TestInjectionProblems(t *testing.T) {
	secret := egressgranttest.Secret
	cases := []struct {
		name   string
		secret *corev1.Secret
		reason string
		detail string
	}{
		{"no Secret", nil, pipeline.TerminationCredentialMissing, `operator: secret "api" not found (the credential for allowed.test:443)`},
		{"no key", secret(map[string]string{"key": "k-0123456789"}), pipeline.TerminationCredentialMissing,
			"operator: couldn't find key token in Secret agents/api (the credential for allowed.test:443)"},
		{"too short", secret(map[string]string{"token": " short\n", "key": "k-0123456789"}), pipeline.TerminationCredentialTooShort,
			"operator: the value of key token in Secret agents/api (the credential for allowed.test:443) is 5 bytes; at least 8 are needed to redact it"},
		{"a line break inside", secret(map[string]string{"token": "ghp_0123\r\nX-Evil: 1", "key": "k-0123456789"}), pipeline.TerminationCredentialMissing,
			"operator: the value of key token in Secret agents/api (the credential for allowed.test:443) is no HTTP header value the proxy sets (at most 4096 bytes of visible ASCII, spaces and tabs)"},
		{"not ASCII", secret(map[string]string{"token": "ghp_0123456789é", "key": "k-0123456789"}), pipeline.TerminationCredentialMissing,
			"operator: the value of key token in Secret agents/api (the credential for allowed.test:443) is no HTTP header value the proxy sets (at most 4096 bytes of visible ASCII, spaces and tabs)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			if tc.secret != nil {
				b = b.WithObjects(tc.secret)
			}
			inject, ended, err := injections(context.Background(), b.Build(), testCall(egressgranttest.WithInjection), 1)
			if err != nil || inject != nil || ended == nil {
				t.Fatalf("err %v, inject %v, ended %v: want the attempt ended", err, inject, ended)
			}
			want := pipeline.Outcome{TerminationReason: tc.reason, Attempt: 1, Detail: tc.detail}
			if diff := cmp.Diff(want, *ended); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
			if r := pipeline.Normalize(*ended, pipeline.NormalizeOptions{}); string(r.Reason) != tc.reason {
				t.Errorf("result reason %q, want %q", r.Reason, tc.reason)
			}
		})
	}
}

// A proxy URL with a name (a .svc name) reaches the Pod as a hostAlias: its policy allows
// no DNS. An address needs none.
func TestProxyHostAlias(t *testing.T) {
	o := testOptions()
	if a, err := o.proxyHostAlias(context.Background()); a != nil || err != nil {
		t.Errorf("ClusterIP URL: alias %+v, %v", a, err)
	}
	o.URL = "http://toolgate-egress-proxy.toolgate-system.svc:3128"
	o.Resolver = egress.StaticResolver{Hosts: map[string][]netip.Addr{"toolgate-egress-proxy.toolgate-system.svc": {netip.MustParseAddr("10.0.0.12")}}}
	a, err := o.proxyHostAlias(context.Background())
	if err != nil || a == nil || a.IP != "10.0.0.12" || len(a.Hostnames) != 1 || a.Hostnames[0] != "toolgate-egress-proxy.toolgate-system.svc" {
		t.Errorf(".svc URL: alias %+v, %v", a, err)
	}
	o.Resolver = egress.StaticResolver{}
	if _, err := o.proxyHostAlias(context.Background()); err == nil {
		t.Error("an unresolvable proxy name gave no error")
	}
}

func TestRecordOfKeepsEveryProxyReason(t *testing.T) {
	for _, reason := range append(egress.RefusalReasons(), "Bogus") {
		got := recordOf(egress.Record{Destinations: []egress.Destination{{Host: "allowed.test", Port: 443, Refused: 1, Reason: reason}}})
		want := reason
		if reason == "Bogus" {
			want = ""
		}
		if len(got.Destinations) != 1 || got.Destinations[0].Reason != want {
			t.Errorf("reason %q: recorded %+v, want reason %q", reason, got.Destinations, want)
		}
	}
}
