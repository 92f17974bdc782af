// Package sessionexec is the session executor (an executor.Executor): the calls of one
// session — (scope, session, requester) — of one tool run one after another in a
// long-lived sandbox Pod, each with every promise of a cold call: its Handover
// authenticated for the call, attempt, digest and Pod, its frame signed with the attempt's
// key, its deadline enforced by the runner and by the operator, nothing but /workspace
// carried over (cmd/runner's session mode resets the container between calls). The
// operator reaches the Pod's signer directly, over mutual TLS (Transport). A Pod that
// misbehaves is replaced; an idle one is deleted (reaper.go). It returns what its steps
// came to; the ToolCall reconciler writes the call's status.
package sessionexec

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/execenv"
	"github.com/toolgate/toolgate/controllers/executor/jobexec"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/internal/callmemo"
	"github.com/toolgate/toolgate/controllers/internal/events"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// startPoll is how soon a call whose session Pod is starting looks again.
const startPoll = 100 * time.Millisecond

// Executor runs the attempts of session calls in their session's Pod.
type Executor struct {
	execenv.Env
	transport Transport
	auth      *authority
	runs      runs
	book      book
	bindings  bindings
	// stops are the calls whose end waits for their session Pod to stop: the Pod's key
	// (StoppingPods, PodWaiters).
	stops callmemo.Memo[types.NamespacedName]
}

// New is the session executor of env. transport nil: TLSTransport with this process's
// session CA.
func New(env execenv.Env, transport Transport) (*Executor, error) {
	auth, err := processAuthority()
	if err != nil {
		return nil, fmt.Errorf("session CA: %w", err)
	}
	if transport == nil {
		transport = NewTLSTransport(auth.clientConfig)
	}
	return &Executor{Env: env, transport: transport, auth: auth,
		runs: runs{Aside: executor.NewAside[Reply, runNote]()}}, nil
}

// Path is v1alpha1.PathSession.
func (s *Executor) Path() v1alpha1.ExecutionPath { return v1alpha1.PathSession }

// Supports is every feature: the session Pod is built for its tool as a cold Pod is, and
// what differs per call (arguments, key, deadline, egress grant) comes with the Handover.
func (s *Executor) Supports() executor.FeatureSet { return feature.Names }

// Wakeups are the events of session calls whose reply arrived (executor.WakeSource).
func (s *Executor) Wakeups() chan ctrlevent.GenericEvent { return s.runs.Wakeups() }

func logger(ctx context.Context) logr.Logger { return ctrl.LoggerFrom(ctx) }

// Claim takes the attempt of a call with a session made in a scope whose chain declares
// sessionSandbox, unless a cap would be passed by starting its Pod (then it runs cold).
// The session's Pod is the pool Pod it claimed, else its own (PodName); a session's first
// call of a tool that keeps session pool Pods claims one (poolclaim.go), and the session
// Pod is created only when none can be had.
func (s *Executor) Claim(ctx context.Context, call *v1alpha1.ToolCall, a *v1alpha1.Attempt) (string, bool) {
	if call.Spec.Session == "" || call.Status.Tool == nil || call.Status.Tool.Spec == nil {
		return "", false
	}
	scope, err := s.declaration(ctx, call)
	if err != nil || scope == nil {
		return "", false
	}
	turn := s.bindings.turn(sessionDigest(call))
	turn.Lock()
	defer turn.Unlock()
	name := s.bindings.podName(ctx, s.Client, call)
	if why := s.overCap(ctx, call, name); why != "" {
		metrics.SessionPods.WithLabelValues(call.Namespace, "capped").Inc()
		logger(ctx).Info("session Pod cap reached; the call runs in a Pod of its own", "why", why)
		return "", false
	}
	where := "session Pod " + name
	if name == PodName(call) && poolServes(call) && !exists(ctx, s.Client, call.Namespace, name) {
		if pod := (claimer{s}).claim(ctx, call, scope); pod != nil {
			name, where = pod.Name, "session Pod "+pod.Name+" (claimed from the warm pool)"
			s.event(call, "SessionPodClaimed", "Claim", "claimed pool Pod "+pod.Name+" as the session's Pod")
			logger(ctx).Info("claimed a pool Pod for a session", "pod", pod.Name)
		}
	}
	a.Path, a.PodName, a.JobName = v1alpha1.PathSession, name, ""
	call.Status.Job = nil
	return where, true
}

// exists: the named Pod is in c (the cache).
func exists(ctx context.Context, c client.Reader, namespace, name string) bool {
	return c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &corev1.Pod{}) == nil
}

// overCap says which cap starting the call's session Pod would pass ("" when none, or
// when the Pod exists).
func (s *Executor) overCap(ctx context.Context, call *v1alpha1.ToolCall, name string) string {
	o := s.Options.Session
	if exists(ctx, s.Client, call.Namespace, name) {
		return ""
	}
	if o.MaxPerNamespace > 0 {
		pods := &corev1.PodList{}
		if err := s.List(ctx, pods, client.InNamespace(call.Namespace), client.HasLabels{podcontract.LabelSessionPod}); err != nil || len(pods.Items) >= o.MaxPerNamespace {
			return fmt.Sprintf("%d session Pods in namespace %s (--session-max-pods-per-namespace)", len(pods.Items), call.Namespace)
		}
	}
	if o.MaxPerRequester > 0 {
		pods := &corev1.PodList{}
		if err := s.List(ctx, pods, client.MatchingLabels{podcontract.LabelSessionRequester: requesterDigest(call.Spec.Requester)}); err != nil || len(pods.Items) >= o.MaxPerRequester {
			return fmt.Sprintf("%d session Pods of the requester (--session-max-pods-per-requester)", len(pods.Items))
		}
	}
	return ""
}

// Start prepares the call's input as a cold attempt's (its features: the egress grant, the
// workspace), makes sure the session's Pod for it runs (created on the session's first
// call, replaced when it may not serve), then hands its runner the call over the
// transport, aside; the reply wakes the call.
func (s *Executor) Start(ctx context.Context, call *v1alpha1.ToolCall) (executor.Step, error) {
	a := executor.Current(call)
	s.runs.begin(call.UID)
	frozen, err := s.FrozenArguments(call)
	if err != nil {
		return executor.Internal("the frozen arguments could not be reproduced"), nil
	}
	if !s.Clock.Now().Before(s.AttemptDeadline(call)) {
		o := pipeline.Outcome{TerminationReason: pipeline.TerminationDeadlineExceeded, Attempt: int(a.Attempt),
			Detail: "operator: the session Pod did not take the call before its deadline"}
		return executor.Step{Outcome: &o}, nil
	}
	scope, err := s.declaration(ctx, call)
	if err != nil {
		return executor.Step{}, err
	}
	if scope == nil {
		return executor.Internal("the scope that declared the session sandbox is gone"), nil
	}
	in := podspec.Input{Call: call, Tool: call.Status.Tool.Spec, Arguments: frozen.Canonical(), Digest: frozen.Digest(),
		Attempt: a.Attempt, Traceparent: tracing.ExecutionTraceparent(ctx, int(a.Attempt))}
	if st, ok, err := s.Features.PrepareInput(ctx, call, a.Attempt, &in); !ok {
		return st, err
	}
	name := a.PodName
	if name == "" {
		name = PodName(call)
	}
	want, err := s.buildPod(call, scope, name, podspec.SessionPodSpec(in, s.Options.Job, name))
	if err != nil {
		return executor.Step{}, err
	}
	if why, err := s.Isolate(ctx, call, want.Labels); err != nil || why != "" {
		return netisolation.Refuse(why), err
	}
	masters, st, ok, err := s.FrameKeyReady(ctx, call)
	if !ok {
		return st, err
	}
	if st, ok, err := s.Features.PreparePod(ctx, call, feature.Pod{Spec: &want.Spec, Labels: []map[string]string{want.Labels}}); !ok {
		return st, err
	}
	want.Annotations[podcontract.AnnotationSessionSpec] = podspec.SessionSpecDigest(&want.Spec)
	pod, started, why, err := s.ensurePod(ctx, want)
	switch {
	case err != nil:
		return executor.Step{}, err
	case pod == nil:
		if why != "" {
			s.event(call, "SessionPodReplaced", "Replace", fmt.Sprintf("session Pod %s replaced: %s", want.Name, why))
			metrics.SessionPods.WithLabelValues(call.Namespace, "replaced").Inc()
		}
		return executor.Step{Requeue: startPoll}, nil
	case started:
		s.event(call, "SessionPodStarted", "Start", "started session Pod "+pod.Name)
		metrics.SessionPods.WithLabelValues(call.Namespace, "started").Inc()
		logger(ctx).Info("started a session Pod", "pod", pod.Name)
		s.prestart(call, scope)
		return executor.Step{Requeue: startPoll}, nil
	case pod.Status.PodIP == "" || !signerRunning(pod):
		if reason, detail, ended := s.Features.ClassifyPod(pod); ended {
			// A Pod that cannot start for a feature's reason (a credential's Secret missing):
			// the call ends as a cold one would, and the Pod goes.
			s.deletePod(ctx, pod, "it cannot start: "+detail)
			o := pipeline.Outcome{Attempt: int(a.Attempt), TerminationReason: reason, Detail: detail}
			return executor.Step{Outcome: &o}, nil
		}
		return executor.Step{Requeue: startPoll}, nil
	}
	if retry := s.Features.Running(ctx, call, pod); retry > 0 {
		return executor.Step{Requeue: retry}, nil // the egress grant is bound to the Pod first
	}
	line, err := handover(call, in, pod, masters)
	if err != nil {
		return executor.Internal("the call could not be handed over: " + err.Error()), nil
	}
	deadline := s.AttemptDeadline(call)
	s.book.busy(pod.UID, call.UID)
	s.runs.start(call, pod, func() (Reply, error) {
		hctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		return s.transport.Call(hctx, pod, line)
	})
	return executor.Step{Requeue: deadline.Sub(s.Clock.Now())}, nil
}

// signerRunning: the Pod's signer container runs (it listens once it does).
func signerRunning(pod *corev1.Pod) bool {
	cs := podspec.ContainerStatus(pod, podcontract.SignerContainerName)
	return pod.Status.Phase == corev1.PodRunning && cs != nil && cs.State.Running != nil
}

// handover is the call's Handover for pod: the attempt's key, the frozen arguments and
// digest, the trace context, the tool's timeout as the runner's deadline and the call's
// own environment (its egress grant), signed for this Pod with each master's handover key.
func handover(call *v1alpha1.ToolCall, in podspec.Input, pod *corev1.Pod, masters [][]byte) ([]byte, error) {
	h := frame.Handover{CallUID: string(call.UID), Attempt: int(in.Attempt), Arguments: in.Arguments,
		ArgumentsDigest: in.Digest, Traceparent: in.Traceparent,
		AttemptKey: frame.AttemptKey(masters[0], string(call.UID), int(in.Attempt)),
		DeadlineMs: podspec.TimeoutSeconds(in.Tool) * 1000, Env: podspec.SessionCallEnv(in)}
	if err := frame.CheckSession(h); err != nil {
		return nil, err
	}
	return frame.EncodeHandover(frame.SignHandover(masters, string(pod.UID), h))
}

// event records a Normal Event on the call.
func (s *Executor) event(call *v1alpha1.ToolCall, reason, action, note string) {
	events.Emit(s.Recorder, call, corev1.EventTypeNormal, reason, action, note)
}

// Observe reads the call's reply once the transport has it. A call this process never
// started (a restart, a new leader) cannot be reached again — its Pod trusts another
// process's CA — and its body may have run: its attempt ends PodDeleted and the Pod is
// replaced; it is never handed over twice.
func (s *Executor) Observe(ctx context.Context, call *v1alpha1.ToolCall) (executor.Step, error) {
	a := executor.Current(call)
	run, inFlight := s.runs.Get(call.UID)
	if !inFlight {
		if s.runs.begun(call.UID) {
			return s.Start(ctx, call)
		}
		o := pipeline.Outcome{Attempt: int(a.Attempt), Started: true, TerminationReason: pipeline.TerminationPodDeleted,
			Detail: "operator: restarted while the call ran in session Pod " + a.PodName + "; its outcome is unknown and the Pod is replaced"}
		s.deleteByName(ctx, call.Namespace, a.PodName, "its call's operator restarted")
		return s.ended(call, o, run, true), nil
	}
	past := !s.Clock.Now().Before(s.AttemptDeadline(call))
	if !run.Done {
		if past {
			o := pipeline.Outcome{Attempt: int(a.Attempt), Started: true, TerminationReason: pipeline.TerminationDeadlineExceeded,
				Detail: "operator: no reply from session Pod " + a.PodName + " by the attempt's deadline"}
			return s.ended(call, o, run, true), nil
		}
		return executor.Step{Requeue: s.AttemptDeadline(call).Sub(s.Clock.Now())}, nil
	}
	if run.Err != nil && run.Result.HandedOver.IsZero() && !past {
		// Nothing was handed over (the Pod did not listen, the connection broke first): try
		// again through the controller's rate limiter; the runner read no whole line.
		s.runs.Forget(call.UID)
		return executor.Step{}, fmt.Errorf("handing the call to session Pod %s: %w", a.PodName, run.Err)
	}
	o, replace := s.replyOutcome(ctx, call, run)
	return s.ended(call, o, run, replace), nil
}

// replyOutcome is the attempt's outcome from its reply: a frame verified for the call's
// attempt and arguments is the call's report; anything else (no reply, an unsigned or
// foreign frame, a broken connection) vouches for no run and the Pod is replaced.
func (s *Executor) replyOutcome(ctx context.Context, call *v1alpha1.ToolCall, run run) (pipeline.Outcome, bool) {
	base := pipeline.Outcome{Attempt: int(executor.CurrentAttempt(call)), Started: !run.Result.HandedOver.IsZero()}
	if run.Err != nil {
		base.TerminationReason = pipeline.TerminationPodDeleted
		if !s.Clock.Now().Before(s.AttemptDeadline(call)) {
			base.TerminationReason = pipeline.TerminationDeadlineExceeded
		}
		base.Detail = "operator: the session Pod's connection failed during the call: " + run.Err.Error()
		return base, true
	}
	msg, ok := frame.LastResultLine(run.Result.Bytes)
	if !ok {
		base.Unreadable = "the session Pod's reply holds no result line"
		return base, true
	}
	f, dec, needLog, err := s.Trust(call).Termination(ctx, msg)
	if err == nil && needLog {
		f, err = dec.DecodeLog(run.Result.Bytes, f)
	}
	if err != nil {
		base.Unreadable = "the session Pod's reply does not verify: " + err.Error()
		return base, true
	}
	base.Report = jobexec.ReportOf(f)
	if f.Reason == frame.ReasonDeadlineExceeded {
		// The runner ended the call at its deadline, as the kubelet ends a cold Pod at its
		// activeDeadlineSeconds: the same reason for the same ending.
		base.TerminationReason = pipeline.TerminationDeadlineExceeded
	}
	return base, frame.EndsSession(f.Reason)
}

// ended is the step of an attempt whose outcome is o; replace marks its Pod for deletion
// at release.
func (s *Executor) ended(call *v1alpha1.ToolCall, o pipeline.Outcome, run run, replace bool) executor.Step {
	a := executor.Current(call)
	if !run.Result.HandedOver.IsZero() && a.HandoverTime == nil {
		a.HandoverTime = &metav1.Time{Time: run.Result.HandedOver}
	}
	s.runs.decide(call.UID, replace)
	if replace && o.Report == nil {
		// Deleted now, not at release: an end the runner did not vouch for is recorded once
		// the Pod has stopped (StoppingPods).
		s.deleteByName(context.Background(), call.Namespace, a.PodName, "its call ended without the runner's account")
	}
	return executor.Step{Outcome: &o}
}

// Release keeps the session's Pod for the next call, idle from now; a Pod the attempt
// found misbehaving is deleted (the next call starts a fresh one).
func (s *Executor) Release(ctx context.Context, call *v1alpha1.ToolCall, ended v1alpha1.Attempt, _ pipeline.Outcome) {
	run, _ := s.runs.Get(call.UID)
	s.runs.done(call.UID)
	s.stops.Forget(client.ObjectKeyFromObject(call))
	if run.Note.pod == "" {
		return
	}
	s.book.idle(run.Note.pod, call.UID, s.Clock.Now())
	if run.Note.replace {
		s.deleteByName(ctx, call.Namespace, ended.PodName, "its last call found it misbehaving")
		metrics.SessionPods.WithLabelValues(call.Namespace, "replaced").Inc()
		s.event(call, "SessionPodReplaced", "Replace", "session Pod "+ended.PodName+" deleted after this call; the next call starts a fresh one")
	}
}

// Stop deletes the session Pod of a cancelled call's running attempt: the body stops now,
// and the Pod is never used again (the session's next call starts a fresh one). Again on
// every pass until the Pod has stopped (StoppingPods): the run stays known until the call
// ends (Tidy).
func (s *Executor) Stop(ctx context.Context, call *v1alpha1.ToolCall) (string, error) {
	name := executor.Current(call).PodName
	if _, inFlight := s.runs.Get(call.UID); !inFlight {
		return "", nil // nothing was handed over by this process
	}
	s.deleteByName(ctx, call.Namespace, name, "its call was cancelled")
	return "session Pod " + name + " deleted", nil
}

// deleteByName deletes the named session Pod, when it is one.
func (s *Executor) deleteByName(ctx context.Context, namespace, name, why string) {
	pod := &corev1.Pod{}
	if err := s.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod); err != nil {
		return
	}
	if pod.Labels[podcontract.LabelSessionPod] != "" && pod.DeletionTimestamp.IsZero() {
		s.deletePod(ctx, pod, why)
	}
}

// Tidy forgets the run and the wait of a call that ended, and the wait of one that is gone;
// a session Pod outlives its calls (reaper.go deletes it).
func (s *Executor) Tidy(_ context.Context, key types.NamespacedName, call *v1alpha1.ToolCall) (time.Duration, error) {
	if call == nil || call.Status.Phase.IsTerminal() {
		s.stops.Forget(key)
	}
	if call != nil && call.Status.Phase.IsTerminal() {
		s.runs.done(call.UID)
	}
	return 0, nil
}
