package egressgrant

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Feature is the egress feature (feature.Egress): a tool with sandbox.egress reaches
// its named hosts only through the egress proxy, with a grant per attempt (prepared before
// the Pod is built, bound to the Pod once it has an address, ended and recorded after the
// attempt); the proxy's NetworkPolicy joins the namespace's isolation.
type Feature struct {
	// Options are the proxy's settings.
	Options ProxyOptions
	// APIReader reads the credentials' Secrets live.
	APIReader client.Reader
	// Binder binds grants to Pods.
	Binder *Binder
	// Clock is the operator's clock.
	Clock clock.PassiveClock
	// Deadline is when the operator ends the call's current attempt: its grant's expiry.
	Deadline func(call *toolgatev1alpha1.ToolCall) time.Time
}

var (
	_ feature.Feature         = (*Feature)(nil)
	_ feature.InputPreparer   = (*Feature)(nil)
	_ feature.RunningWatcher  = (*Feature)(nil)
	_ feature.AfterEnder      = (*Feature)(nil)
	_ feature.NetworkPolicies = (*Feature)(nil)
)

// Name is feature.Egress.
func (*Feature) Name() feature.Name { return feature.Egress }

// Uses reports whether the tool goes out through the egress proxy (an allow list).
func (*Feature) Uses(spec *toolgatev1alpha1.ToolSpec) bool {
	return podspec.HasEgressAllow(spec.Sandbox)
}

// PrepareInput prepares the egress proxy of the attempt about to start (ForAttempt): its
// URL with the grant, host alias and CA go into the Pod. A proxy the operator has not got
// refuses the call (NetworkIsolationMissing); a credential that cannot be injected ends
// the attempt.
func (f *Feature) PrepareInput(ctx context.Context, call *toolgatev1alpha1.ToolCall, attempt int32, in *podspec.Input) (executor.Step, bool, error) {
	px, unavailable, ended, err := f.Options.ForAttempt(ctx, f.APIReader, call, attempt, f.Deadline(call))
	switch {
	case unavailable != "":
		return netisolation.Refuse(unavailable), false, nil
	case ended != nil || err != nil:
		return executor.Step{Outcome: ended}, false, err
	}
	in.EgressProxyURL, in.EgressProxyAlias, in.EgressCA = px.URL, px.Alias, px.CA
	return executor.Step{}, true, nil
}

// Running binds the current attempt's grant to its running Pod (Binder): BindRetry when
// the proxy was not told and should be, on a later pass.
func (f *Feature) Running(ctx context.Context, call *toolgatev1alpha1.ToolCall, pod *corev1.Pod) time.Duration {
	if f.Binder.Bind(ctx, call, pod, executor.CurrentAttempt(call), f.Deadline(call), f.Clock.Now()) {
		return BindRetry
	}
	return 0
}

// AfterEnd ends the grant of attempt n, the call's current one, and records what the
// proxy saw of it in its status, once (EndGrant).
func (f *Feature) AfterEnd(ctx context.Context, call *toolgatev1alpha1.ToolCall, n int) {
	a := &call.Status.Attempts[n]
	if a.Egress != nil {
		return
	}
	// The expiry the grant was signed with: the same deadline, from the attempt's start.
	a.Egress = f.Options.EndGrant(ctx, call, *a, f.Deadline(call))
}

// Policies are the proxy's NetworkPolicies in namespace (ProxyPolicies).
func (f *Feature) Policies(namespace string) []*networkingv1.NetworkPolicy {
	return ProxyPolicies(namespace, f.Options, netisolation.ToolPodSelector(podcontract.NetworkProxy))
}

// PolicyNames is the proxy's NetworkPolicy.
func (*Feature) PolicyNames() []string { return []string{ProxyPolicyName} }
