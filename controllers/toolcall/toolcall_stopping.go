package toolcall

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/internal/callmemo"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// An attempt that is stopped (a cancel, a deletion) or that ended without the runner's word
// (killed at a deadline, its Job or Pod deleted under it, lost) may still have a body
// running: a deleted Pod runs on for its termination grace period, a body that ignores
// SIGTERM to its very end, and a Pod whose node stopped reporting for as long as the node
// is away. Deleting a Job does not wait for its Pods. So the end of such an attempt — the
// call's terminal status, or its next attempt — is recorded only once every Pod of the
// attempt is quiet (podQuiet: gone, or every container terminated); until then the operator
// deletes any Pod of the attempt that is not being deleted yet and the call stays
// unfinished: it keeps its place as its session's barrier (runnable), its session's
// workspace claim stays in use (workspace.Reconciler), a deleted call keeps its finalizer,
// and the Executed condition says what it waits for (ReasonStopping).
//
// The wait is bounded: a Pod that has not confirmed its containers stopped DeadlineGrace
// after its deletion's grace period ran out (its node is gone or cut off) is overdue. The
// end is then recorded saying so — never "stopped" — and only after that write is the Pod
// force-deleted (grace period 0), so that no pass can later find it gone and claim more.

// attemptStop is what stopping an attempt's Pods came to.
type attemptStop struct {
	// running names the Pods still running (their deletion requested): the end waits.
	running []string
	// overdue are the Pods that did not confirm they stopped within the bound.
	overdue []*corev1.Pod
	// requeue is when the first running Pod becomes overdue (0: unknown).
	requeue time.Duration
}

func (s attemptStop) waiting() bool { return len(s.running) > 0 }

// unconfirmed is the account of the overdue Pods for a condition message ("" when none).
func (s attemptStop) unconfirmed(bound time.Duration) string {
	if len(s.overdue) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.overdue))
	for _, p := range s.overdue {
		names = append(names, p.Name)
	}
	return fmt.Sprintf("operator: Pod %s did not confirm that its containers stopped within %s after its grace period "+
		"(its node does not report); it is force-deleted and the body may have run on", strings.Join(names, ", "), bound)
}

// stopAttemptPods stops what still runs of attempt a: each Pod of it that is not quiet is
// deleted (gracefully) unless it is being deleted already. It reads the cache first and,
// when the cache shows nothing running, confirms with the API server: a Pod created a
// moment ago may not be in the cache yet.
func (s *podStopper) stopAttemptPods(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) (attemptStop, error) {
	r := s.r
	shared, err := s.sharedPods(ctx, call, a)
	if err != nil {
		return attemptStop{}, err
	}
	pods, err := attemptPods(ctx, r.Client, call, a.Attempt, false)
	if err != nil {
		return attemptStop{}, err
	}
	st, err := s.stopPods(ctx, append(pods, shared...))
	if err != nil || st.waiting() || r.APIReader == nil {
		return st, err
	}
	if pods, err = attemptPods(ctx, r.APIReader, call, a.Attempt, true); err != nil {
		return attemptStop{}, err
	}
	return s.stopPods(ctx, append(pods, shared...))
}

// sharedPods are the Pods being deleted that attempt a ran in without a mark of its own
// (executor.StoppingPods: a session Pod).
func (s *podStopper) sharedPods(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) ([]*corev1.Pod, error) {
	if sp, ok := s.r.executorFor(a).(executor.StoppingPods); ok {
		return sp.StoppingPods(ctx, call, a)
	}
	return nil, nil
}

// attemptPods lists the Pods of the call's attempt (a Job's Pod or a claimed warm Pod: both
// carry the call's name and the attempt): from the cache by the call-name index, or live
// by labels (the API server has no field index).
func attemptPods(ctx context.Context, reader client.Reader, call *v1alpha1.ToolCall, attempt int32, live bool) ([]*corev1.Pod, error) {
	n := strconv.Itoa(int(attempt))
	selector := client.ListOption(client.MatchingFields{indexCallName: call.Name})
	if live {
		selector = client.MatchingLabels{podcontract.LabelCall: podspec.CallLabelValue(call.Name), podcontract.LabelAttempt: n}
	}
	list := &corev1.PodList{}
	if err := reader.List(ctx, list, client.InNamespace(call.Namespace), selector); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.Annotations[podcontract.AnnotationCallName] == call.Name && p.Labels[podcontract.LabelAttempt] == n {
			out = append(out, p)
		}
	}
	return out, nil
}

// stopPods deletes every Pod that is not quiet and not being deleted yet, and sorts the rest
// into running (wait) and overdue.
func (s *podStopper) stopPods(ctx context.Context, pods []*corev1.Pod) (attemptStop, error) {
	r := s.r
	var st attemptStop
	now := r.Clock.Now()
	for _, p := range pods {
		switch {
		case podQuiet(p):
		case p.DeletionTimestamp.IsZero():
			uid := p.UID
			err := r.Delete(ctx, p, client.Preconditions{UID: &uid})
			if apierrors.IsNotFound(err) {
				continue // gone already: the cache is behind
			}
			if err != nil && !apierrors.IsConflict(err) {
				return attemptStop{}, err
			}
			ctrl.LoggerFrom(ctx).Info("deleted a Pod of an ended attempt that still runs", "pod", p.Name)
			st.running = append(st.running, p.Name)
		case forceDeleted(p):
			st.overdue = append(st.overdue, p)
		default:
			due := p.DeletionTimestamp.Add(r.Options.DeadlineGrace)
			if !now.Before(due) {
				st.overdue = append(st.overdue, p)
				continue
			}
			st.running = append(st.running, p.Name)
			if wait := due.Sub(now); st.requeue == 0 || wait < st.requeue {
				st.requeue = wait
			}
		}
	}
	return st, nil
}

// podQuiet reports whether nothing runs in the Pod, nor can start: every container the
// kubelet reports on (init, regular, ephemeral) has terminated, or the Pod's phase is
// terminal with none of them running. A Pod with a container running, or waiting to start
// (its image, a Secret), is not quiet; nor is one the kubelet has not reported on yet.
// A Pod that is gone is quiet: it is not listed.
func podQuiet(p *corev1.Pod) bool {
	terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	statuses := slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses)
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated == nil && !terminal {
			return false
		}
	}
	return terminal || len(statuses) > 0
}

// forceDeleted: the Pod's deletion has no grace period left to wait for (the operator, or
// someone, force-deleted it); it may still be listed while a finalizer holds it.
func forceDeleted(p *corev1.Pod) bool {
	return !p.DeletionTimestamp.IsZero() && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
}

// forceDelete force-deletes the overdue Pods of an attempt whose end is recorded.
func (s *podStopper) forceDelete(ctx context.Context, pods []*corev1.Pod) {
	r := s.r
	for _, p := range pods {
		if forceDeleted(p) {
			continue
		}
		uid := p.UID
		err := r.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})
		if client.IgnoreNotFound(err) != nil {
			ctrl.LoggerFrom(ctx).Error(err, "could not force-delete a Pod that did not confirm it stopped", "pod", p.Name)
			continue
		}
		ctrl.LoggerFrom(ctx).Info("force-deleted a Pod that did not confirm it stopped", "pod", p.Name, "node", p.Spec.NodeName)
	}
}

// awaitStopped records, once, that the end of the call's attempt waits for its Pods to stop
// (Executed=Unknown, ReasonStopping; what says why the attempt ends), and waits: the Pods'
// events wake the call, and at the latest it looks again when the first becomes overdue.
func (s *podStopper) awaitStopped(ctx context.Context, call *v1alpha1.ToolCall, st attemptStop, what string) (ctrl.Result, error) {
	r := s.r
	msg := fmt.Sprintf("%s; waiting for Pod %s to stop before the end is recorded", what, strings.Join(st.running, ", "))
	if c := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionExecuted); c == nil ||
		c.Reason != v1alpha1.ReasonStopping || c.Message != msg {
		r.setCondition(call, v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonStopping, msg)
		if err := r.status.writeStatus(ctx, call); err != nil {
			return ctrl.Result{}, err
		}
	}
	requeue := st.requeue
	if requeue <= 0 {
		requeue = max(r.Options.DeadlineGrace, time.Second)
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// decidedEnds keeps, per call, the outcome of an attempt whose end waits for its Pods, so
// that the end recorded is the one first read: stopping a Pod changes what observe would
// read next (a Pod that is gone takes its container's start and its reasons with it). In
// memory: after a restart the outcome is read again from what is left.
type decidedEnds struct {
	m callmemo.Memo[decidedEnd]
}

type decidedEnd struct {
	attempt        int32
	outcome        pipeline.Outcome
	containerStart time.Time
}

func (d *decidedEnds) keep(ctx context.Context, call *v1alpha1.ToolCall, o pipeline.Outcome) {
	started, _ := ctx.Value(containerStartKey{}).(time.Time)
	d.m.Put(call, decidedEnd{attempt: executor.CurrentAttempt(call), outcome: o, containerStart: started})
}

// get is the kept outcome of the call's current attempt, if any.
func (d *decidedEnds) get(call *v1alpha1.ToolCall) (executor.Step, bool) {
	e, ok := d.m.Get(call)
	if !ok || e.attempt != executor.CurrentAttempt(call) {
		return executor.Step{}, false
	}
	o := e.outcome
	return executor.Step{Outcome: &o, ContainerStart: e.containerStart}, true
}

func (d *decidedEnds) forget(key types.NamespacedName) { d.m.Forget(key) }
