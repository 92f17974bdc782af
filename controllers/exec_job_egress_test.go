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
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/egressgrant/egressgranttest"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

var withInjection = egressgranttest.WithInjection

func injectCall(mut func(*toolgatev1alpha1.ToolSpec)) *toolgatev1alpha1.ToolCall {
	in := testJobInput(mut)
	in.Call.Status.Tool = &toolgatev1alpha1.ToolSnapshot{Spec: in.Tool}
	in.Call.Status.Attempts = []toolgatev1alpha1.Attempt{{Attempt: 1, StartTime: &metav1.Time{Time: time.Unix(1_000_000, 0)}}}
	return in.Call
}

// The grant the operator signs carries the injections (egressgrant); the Pod carries none
// of the values: the body gets the CA to trust (and the link volume for the bundle), the
// signer a reference to each value to redact.
func TestEgressInjectJob(t *testing.T) {
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
	newExec := func(o egressgrant.ProxyOptions, objs ...*corev1.Secret) *jobExecutor {
		b := fake.NewClientBuilder()
		for _, s := range objs {
			b = b.WithObjects(s)
		}
		opts := DefaultCallOptions()
		opts.EgressProxy = o
		return newJobExecutor(execenv.Env{APIReader: b.Build(), Clock: clk, Options: opts})
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
	px, _, ok, err := newExec(withCA, egressgranttest.Secret(map[string]string{"token": egressgranttest.Token, "key": "k-0123456789"})).attemptEgress(context.Background(), call, 1)
	if !ok || err != nil || px.CA != "CA PEM" || !strings.HasPrefix(px.URL, "http://call:") {
		t.Errorf("ok %v, err %v, proxy %+v: want the proxy URL and the CA", ok, err, px)
	}
	if strings.Contains(px.URL, egressgranttest.Token) {
		t.Error("the proxy URL holds the token in clear")
	}
	plain := injectCall(withEgress)
	if px, _, ok, err := newExec(noCA).attemptEgress(context.Background(), plain, 1); !ok || err != nil || px.CA != "" || px.URL == "" {
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
