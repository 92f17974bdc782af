package jobexec

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/netisolation"
)

// attemptEgress prepares the egress proxy of the attempt about to start
// (egressgrant.ProxyOptions.ForAttempt). Not ok: the attempt ends or is refused with st,
// or err is retried.
func (j *Executor) attemptEgress(ctx context.Context, call *v1alpha1.ToolCall, attempt int32) (egressgrant.AttemptProxy, executor.Step, bool, error) {
	px, unavailable, ended, err := j.Options.EgressProxy.ForAttempt(ctx, j.APIReader, call, attempt, j.AttemptDeadline(call))
	switch {
	case unavailable != "":
		return egressgrant.AttemptProxy{}, netisolation.Refuse(unavailable), false, nil
	case ended != nil || err != nil:
		return egressgrant.AttemptProxy{}, executor.Step{Outcome: ended}, false, err
	}
	return px, executor.Step{}, true, nil
}

// bindEgress binds the call's current attempt's grant to pod when the tool goes out through
// the proxy and the Pod has not ended (egressgrant.Binder). retry is true when the proxy was
// not told and should be, on a later reconcile (soon: egressgrant.BindRetry).
func (j *Executor) bindEgress(ctx context.Context, call *v1alpha1.ToolCall, pod *corev1.Pod) (retry bool) {
	if pod == nil || PodEnded(pod) || !egressgrant.Uses(call) {
		return false
	}
	return j.binder.Bind(ctx, call, pod, executor.CurrentAttempt(call), j.AttemptDeadline(call), j.Clock.Now())
}
