package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

const injectToken = "ghp_0123456789abcdef"

// withInjection gives the tool two destinations whose requests the proxy injects into
// (a Bearer token in Authorization by default; an API key alone in X-Api-Key) and one
// without.
func withInjection(spec *toolgatev1alpha1.ToolSpec) {
	ref := func(key string) toolgatev1alpha1.CredentialKeySelector {
		return toolgatev1alpha1.CredentialKeySelector{Name: "api", Key: key}
	}
	spec.Sandbox.Network = toolgatev1alpha1.NetworkEgress
	spec.Sandbox.Egress = &toolgatev1alpha1.Egress{Allow: []toolgatev1alpha1.EgressRule{
		{Host: "allowed.test", Port: 443, Credential: &toolgatev1alpha1.EgressCredential{SecretKeyRef: ref("token"), Scheme: "Bearer"}},
		{Host: "other.test", Port: 443},
		{Host: "keyed.test", Port: 8443, Credential: &toolgatev1alpha1.EgressCredential{SecretKeyRef: ref("key"), Header: "X-Api-Key"}},
	}}
}

func injectCall(mut func(*toolgatev1alpha1.ToolSpec)) *toolgatev1alpha1.ToolCall {
	in := testJobInput(mut)
	in.Call.Status.Tool = &toolgatev1alpha1.ToolSnapshot{Spec: in.Tool}
	in.Call.Status.Attempts = []toolgatev1alpha1.Attempt{{Attempt: 1, StartTime: &metav1.Time{Time: time.Unix(1_000_000, 0)}}}
	return in.Call
}

func apiSecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "api"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// The operator reads each credential's value from the call's namespace and puts the whole
// header into the grant: scheme and value, or the value alone; the header defaults to
// Authorization; the value is trimmed (a Secret made from a file ends in a newline).
func TestEgressInjections(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(apiSecret(map[string]string{"token": injectToken + "\n", "key": "k-0123456789"})).Build()
	got, ended, err := egressInjections(context.Background(), c, injectCall(withInjection), 1)
	if err != nil || ended != nil {
		t.Fatalf("err %v, ended %+v", err, ended)
	}
	want := []egress.Injection{
		{Host: "allowed.test", Port: 443, Header: "Authorization", Value: "Bearer " + injectToken},
		{Host: "keyed.test", Port: 8443, Header: "X-Api-Key", Value: "k-0123456789"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("injections (-want +got):\n%s", diff)
	}
}

// A credential the operator cannot inject ends the attempt as a body credential would:
// CredentialMissing or CredentialTooShort, the Secret and key named, the value never.
func TestEgressInjectionProblems(t *testing.T) {
	cases := []struct {
		name   string
		secret *corev1.Secret
		reason string
		detail string
	}{
		{"no Secret", nil, pipeline.TerminationCredentialMissing, `operator: secret "api" not found (the credential for allowed.test:443)`},
		{"no key", apiSecret(map[string]string{"key": "k-0123456789"}), pipeline.TerminationCredentialMissing,
			"operator: couldn't find key token in Secret agents/api (the credential for allowed.test:443)"},
		{"too short", apiSecret(map[string]string{"token": " short\n", "key": "k-0123456789"}), pipeline.TerminationCredentialTooShort,
			"operator: the value of key token in Secret agents/api (the credential for allowed.test:443) is 5 bytes; at least 8 are needed to redact it"},
		{"a line break inside", apiSecret(map[string]string{"token": "ghp_0123\r\nX-Evil: 1", "key": "k-0123456789"}), pipeline.TerminationCredentialMissing,
			"operator: the value of key token in Secret agents/api (the credential for allowed.test:443) is no HTTP header value the proxy sets (at most 4096 bytes of visible ASCII, spaces and tabs)"},
		{"not ASCII", apiSecret(map[string]string{"token": "ghp_0123456789é", "key": "k-0123456789"}), pipeline.TerminationCredentialMissing,
			"operator: the value of key token in Secret agents/api (the credential for allowed.test:443) is no HTTP header value the proxy sets (at most 4096 bytes of visible ASCII, spaces and tabs)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			if tc.secret != nil {
				b = b.WithObjects(tc.secret)
			}
			inject, ended, err := egressInjections(context.Background(), b.Build(), injectCall(withInjection), 1)
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

// The grant the operator signs carries the injections; the Pod carries none of the values:
// the body gets the CA to trust (and the link volume for the bundle), the signer a reference
// to each value to redact.
func TestEgressInjectJob(t *testing.T) {
	call := injectCall(withInjection)
	inject := []egress.Injection{{Host: "allowed.test", Port: 443, Header: "Authorization", Value: "Bearer " + injectToken}}
	deadline := time.Unix(2_000_000, 0)
	g := egressTestOptions().grant(call, 1, deadline, inject)
	if diff := cmp.Diff(inject, g.Inject); diff != "" {
		t.Errorf("grant's injections (-want +got):\n%s", diff)
	}
	in := testJobInput(withInjection)
	in.EgressCA, in.EgressProxyURL = "-----BEGIN CERTIFICATE-----\n", "http://call:g@10.0.0.50:3128"
	spec := podspec.BuildJob(in, podspec.DefaultOptions()).Spec.Template.Spec
	tool, signer := toolIn(spec), signerOf(&spec)
	if v := envValue(tool.Env, podcontract.EnvEgressCA); v != in.EgressCA {
		t.Errorf("%s = %q, want the CA", podcontract.EnvEgressCA, v)
	}
	if !hasMount(tool.VolumeMounts, podcontract.LinkVolume) {
		t.Error("the body's container does not mount the link volume, where the CA bundle goes")
	}
	for _, e := range tool.Env {
		if e.ValueFrom != nil {
			t.Errorf("the body's container gets %s from a Secret", e.Name)
		}
	}
	want := []corev1.EnvVar{
		{Name: podcontract.EnvRedactEgressPrefix + "0", ValueFrom: secretKeyRef(toolgatev1alpha1.CredentialKeySelector{Name: "api", Key: "token"})},
		{Name: podcontract.EnvRedactEgressPrefix + "1", ValueFrom: secretKeyRef(toolgatev1alpha1.CredentialKeySelector{Name: "api", Key: "key"})},
	}
	var got []corev1.EnvVar
	for _, e := range signer.Env {
		if strings.HasPrefix(e.Name, podcontract.EnvRedactEgressPrefix) {
			got = append(got, e)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("signer's redaction references (-want +got):\n%s", diff)
	}
}

// A tool with an egress credential is refused, not run without injection, by an operator
// without the egress CA; a credential problem ends the attempt before any Job.
func TestAttemptEgress(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_010, 0))
	newExec := func(o EgressProxyOptions, objs ...*corev1.Secret) *jobExecutor {
		b := fake.NewClientBuilder()
		for _, s := range objs {
			b = b.WithObjects(s)
		}
		opts := DefaultCallOptions()
		opts.EgressProxy = o
		return newJobExecutor(execEnv{APIReader: b.Build(), Clock: clk, Options: opts})
	}
	call := injectCall(withInjection)
	noCA := egressTestOptions()
	_, st, ok, err := newExec(noCA).attemptEgress(context.Background(), call, 1)
	if ok || err != nil || st.Refused == nil || st.Refused.Reason != toolgatev1alpha1.ReasonNetworkIsolationMissing ||
		!strings.Contains(st.Refused.Detail, "--egress-proxy-ca-file") {
		t.Errorf("no CA: ok %v, err %v, step %+v: want refused naming --egress-proxy-ca-file", ok, err, st.Refused)
	}
	withCA := egressTestOptions()
	withCA.CA = []byte("CA PEM")
	_, st, ok, err = newExec(withCA).attemptEgress(context.Background(), call, 1)
	if ok || err != nil || st.Outcome == nil || st.Outcome.TerminationReason != pipeline.TerminationCredentialMissing {
		t.Errorf("no Secret: ok %v, err %v, outcome %+v: want CredentialMissing", ok, err, st.Outcome)
	}
	px, _, ok, err := newExec(withCA, apiSecret(map[string]string{"token": injectToken, "key": "k-0123456789"})).attemptEgress(context.Background(), call, 1)
	if !ok || err != nil || px.ca != "CA PEM" || !strings.HasPrefix(px.url, "http://call:") {
		t.Errorf("ok %v, err %v, proxy %+v: want the proxy URL and the CA", ok, err, px)
	}
	if strings.Contains(px.url, injectToken) {
		t.Error("the proxy URL holds the token in clear")
	}
	plain := injectCall(withEgress)
	if px, _, ok, err := newExec(noCA).attemptEgress(context.Background(), plain, 1); !ok || err != nil || px.ca != "" || px.url == "" {
		t.Errorf("a tool without credentials: ok %v, err %v, proxy %+v: want a proxy URL and no CA", ok, err, px)
	}
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func hasMount(mounts []corev1.VolumeMount, volume string) bool {
	for _, m := range mounts {
		if m.Name == volume {
			return true
		}
	}
	return false
}
