package jobexec

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/egressgrant/egressgranttest"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/executor/executortest"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

var withInjection = egressgranttest.WithInjection

// injectCall is a call of a tool mut made, in its first attempt.
func injectCall(mut func(*toolgatev1alpha1.ToolSpec)) *toolgatev1alpha1.ToolCall {
	spec := &toolgatev1alpha1.ToolSpec{Timeout: &metav1.Duration{Duration: 90 * time.Second},
		Body: toolgatev1alpha1.ToolBody{Image: "example/echo:1", Command: []string{"/echo"}, Args: []string{"-v"},
			Env: []toolgatev1alpha1.EnvVar{{Name: "MODE", Value: "fast"}}}}
	if mut != nil {
		mut(spec)
	}
	call := &toolgatev1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "agents", UID: "call-uid"},
		Spec:       toolgatev1alpha1.ToolCallSpec{Tool: "echo", Requester: "alice"},
	}
	call.Status.Tool = &toolgatev1alpha1.ToolSnapshot{Spec: spec}
	call.Status.Attempts = []toolgatev1alpha1.Attempt{{Attempt: 1, StartTime: &metav1.Time{Time: time.Unix(1_000_000, 0)}}}
	return call
}

// A tool with an egress credential is refused, not run without injection, by an operator
// without the egress CA; a credential problem ends the attempt before any Job.
func TestAttemptEgress(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_010, 0))
	newExec := func(o egressgrant.ProxyOptions, objs ...*corev1.Secret) *Executor {
		b := fake.NewClientBuilder()
		for _, s := range objs {
			b = b.WithObjects(s)
		}
		opts := options.DefaultCall()
		opts.EgressProxy = o
		return New(executortest.WithFeatures(execenv.Env{APIReader: b.Build(), Clock: clk, Options: opts}))
	}
	// attemptEgress is what the features make of the attempt's Pod input (the proxy's part).
	type proxy struct{ URL, CA string }
	attemptEgress := func(j *Executor, call *toolgatev1alpha1.ToolCall) (proxy, executor.Step, bool, error) {
		var in podspec.Input
		st, ok, err := j.Features.PrepareInput(context.Background(), call, 1, &in)
		return proxy{URL: in.EgressProxyURL, CA: in.EgressCA}, st, ok, err
	}
	call := injectCall(withInjection)
	noCA := egressTestOptions()
	_, st, ok, err := attemptEgress(newExec(noCA), call)
	if ok || err != nil || st.Refused == nil || st.Refused.Reason != toolgatev1alpha1.ReasonNetworkIsolationMissing ||
		!strings.Contains(st.Refused.Detail, "--egress-proxy-ca-file") {
		t.Errorf("no CA: ok %v, err %v, step %+v: want refused naming --egress-proxy-ca-file", ok, err, st.Refused)
	}
	withCA := egressTestOptions()
	withCA.CA = []byte("CA PEM")
	_, st, ok, err = attemptEgress(newExec(withCA), call)
	if ok || err != nil || st.Outcome == nil || st.Outcome.TerminationReason != pipeline.TerminationCredentialMissing {
		t.Errorf("no Secret: ok %v, err %v, outcome %+v: want CredentialMissing", ok, err, st.Outcome)
	}
	px, _, ok, err := attemptEgress(newExec(withCA, egressgranttest.Secret(map[string]string{"token": egressgranttest.Token, "key": "k-0123456789"})), call)
	if !ok || err != nil || px.CA != "CA PEM" || !strings.HasPrefix(px.URL, "http://call:") {
		t.Errorf("ok %v, err %v, proxy %+v: want the proxy URL and the CA", ok, err, px)
	}
	if strings.Contains(px.URL, egressgranttest.Token) {
		t.Error("the proxy URL holds the token in clear")
	}
	plain := injectCall(egressgranttest.WithEgress)
	if px, _, ok, err := attemptEgress(newExec(noCA), plain); !ok || err != nil || px.CA != "" || px.URL == "" {
		t.Errorf("a tool without credentials: ok %v, err %v, proxy %+v: want a proxy URL and no CA", ok, err, px)
	}
}

// egressTestOptions is the proxy of every test (egressgranttest's).
func egressTestOptions() egressgrant.ProxyOptions {
	return egressgrant.ProxyOptions{URL: egressgranttest.ProxyURL, Key: egressgranttest.Key, Namespace: egressgranttest.ProxyNamespace,
		PodLabels: egressgranttest.ProxyLabels()}
}
