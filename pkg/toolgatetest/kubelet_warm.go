package toolgatetest

import (
	"bytes"
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Warm pools in envtest: the Kubelet starts every pool Pod the operator creates (Running,
// its tool container started, Ready) — a Tool's and a ClusterTool's, in whatever namespace
// it keeps it, warm or session pool Pods, and session Pods alike (any toolgate Pod no Job
// owns; a claimed session pool Pod is then served as a session Pod, kubelet_session.go) — and it is the operator's WarmExecutor
// (warmExecutor, in place of pods/attach): a Handover is checked as the runner
// checks it — its auth must verify with a master of the namespace's frame key Secret for
// this Pod (frame.VerifyHandover), else the body does not run and the Pod ends with an
// unsigned HandoverRefused frame — then plays the Pod's script as a cold Pod's — the digest
// check against the Handover's digest, the frame signed with the key derived for the
// Handover's call and attempt, the termination message, the result line on the "stream" —
// and is recorded (Kubelet.Handovers). Outcome.After delays the body's end; Hold, LosePod and
// Waiting are cold-only (a warm Pod already runs).

// WarmHandover is one Handover a warm Pod received.
type WarmHandover struct {
	Namespace, Pod string
	// Call and CallUID are the claim's (the Pod's toolgate.dev/call-name and claimed-by).
	Call    string
	CallUID types.UID
	Attempt int
	At      time.Time
	// Traceparent is the handover's (the execution span the runner hands the body), if any.
	Traceparent string
	// Refused: the Handover's auth did not verify; the body did not run.
	Refused bool
}

// Handovers returns every Handover the Kubelet's warm Pods received, in order.
func (k *Kubelet) Handovers() []WarmHandover {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]WarmHandover(nil), k.handovers...)
}

func (k *Kubelet) setupWarm(mgr ctrl.Manager) error {
	pool := predicate.NewPredicateFuncs(func(o client.Object) bool {
		owner := metav1.GetControllerOf(o)
		return o.GetLabels()[podcontract.LabelManagedBy] == podcontract.ManagedByValue && (owner == nil || owner.Kind != "Job")
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Pod{}, builder.WithPredicates(pool)).
		Named("simulated-kubelet-pool").
		Complete(reconcile.Func(k.startPoolPod))
}

// PausePool leaves pool Pods (and session Pods) Pending (never Ready, so never claimed)
// while paused is true, as a node short of capacity would: calls of a pooled Tool then run
// cold, and a session's call waits for its Pod.
func (k *Kubelet) PausePool(paused bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.poolPaused = paused
}

// startPoolPod plays the kubelet starting a pool Pod: its runner waits for a Handover.
func (k *Kubelet) startPoolPod(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	k.mu.Lock()
	paused := k.poolPaused
	k.mu.Unlock()
	if paused {
		return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	pod := &corev1.Pod{}
	if err := k.Get(ctx, req.NamespacedName, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if len(pod.Status.ContainerStatuses) > 0 || !pod.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if err := k.bindSessionPod(ctx, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
	pod.Status.ContainerStatuses = runningStatuses(pod, true)
	pod.Status.PodIP = simulatedPodIP(pod.UID)
	return ctrl.Result{}, client.IgnoreNotFound(k.Status().Update(ctx, pod))
}

// WarmStream is what the Kubelet's Handover saw of one warm attempt.
type WarmStream struct {
	// HandedOver is when the Handover line was written (zero: it was not).
	HandedOver time.Time
	// StdoutTail is the end of the runner's stdout: its frame.ResultLine.
	StdoutTail []byte
}

// Handover plays a claimed pool Pod's runner taking the Handover line on stdin and running
// the body as scripted; it returns once the tool container ended.
func (k *Kubelet) Handover(ctx context.Context, key types.NamespacedName, line []byte) (WarmStream, error) {
	pod := &corev1.Pod{}
	if err := k.reader().Get(ctx, key, pod); err != nil { // whole: the env is in the spec
		return WarmStream{}, err
	}
	h, err := frame.ReadHandover(bytes.NewReader(line))
	if err != nil {
		return WarmStream{}, err
	}
	env, err := k.containerEnv(ctx, pod)
	if err != nil {
		return WarmStream{}, err
	}
	keys, _ := frame.ParsePublicKeys(env[podcontract.EnvHandoverKeys])
	verified := frame.VerifyHandover(keys, env[podcontract.EnvPodUID], h)
	at := time.Now()
	rec := WarmHandover{Namespace: key.Namespace, Pod: key.Name, Call: pod.Annotations[podcontract.AnnotationCallName],
		CallUID: types.UID(pod.Annotations[podcontract.AnnotationClaimedBy]), At: at, Traceparent: h.Traceparent, Refused: !verified}
	rec.Attempt, _ = strconv.Atoi(pod.Labels[podcontract.LabelAttempt])
	k.mu.Lock()
	k.handovers = append(k.handovers, rec)
	k.mu.Unlock()
	if !verified {
		term, err := k.refuseHandover(ctx, pod)
		return WarmStream{HandedOver: at, StdoutTail: frame.ResultLine([]byte(term.Message))}, err
	}
	o := k.scriptForPod(pod)
	if o.After > 0 {
		select {
		case <-time.After(o.After):
		case <-ctx.Done():
			return WarmStream{HandedOver: at}, ctx.Err()
		}
	}
	term, err := k.playWarm(ctx, pod, o, h, h.AttemptKey)
	stream := WarmStream{HandedOver: at}
	if term != nil && term.Message != "" {
		stream.StdoutTail = frame.ResultLine([]byte(term.Message))
	}
	return stream, err
}

// warmExecutor is the Kubelet as the operator's controllers.WarmExecutor.
type warmExecutor struct{ k *Kubelet }

func (w warmExecutor) Handover(ctx context.Context, key types.NamespacedName, line []byte) (controllers.WarmStream, error) {
	s, err := w.k.Handover(ctx, key, line)
	return controllers.WarmStream{HandedOver: s.HandedOver, StdoutTail: s.StdoutTail}, err
}

// scriptForPod is the script of a Pod's tool and attempt (a warm Pod's, or a Job's Pod's).
func (k *Kubelet) scriptForPod(pod *corev1.Pod) Outcome {
	attempt, _ := strconv.Atoi(pod.Labels[podcontract.LabelAttempt])
	return k.toolScript(pod.Annotations[podcontract.AnnotationTool], attempt)
}

// toolScript is the script of a tool's attempt.
func (k *Kubelet) toolScript(tool string, attempt int) Outcome {
	k.mu.Lock()
	defer k.mu.Unlock()
	if list := k.attempts[tool]; len(list) > 0 {
		return list[min(max(attempt, 1), len(list))-1]
	}
	if o, ok := k.scripts[tool]; ok {
		return o
	}
	return Outcome{Echo: true}
}

// playWarm writes the warm Pod's end for o; it returns the tool container's terminated
// state when the runner wrote one (nil: the kubelet failed the Pod).
func (k *Kubelet) playWarm(ctx context.Context, pod *corev1.Pod, o Outcome, h frame.Handover, key []byte) (*corev1.ContainerStateTerminated, error) {
	if o.DeadlineExceeded || o.Evicted || o.PodReason != "" {
		pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, "DeadlineExceeded"
		if o.Evicted {
			pod.Status.Reason = "Evicted"
		} else if o.PodReason != "" {
			pod.Status.Reason = o.PodReason
		}
		pod.Status.ContainerStatuses = endedStatuses(pod, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"})
		return nil, k.writer().Status().Update(ctx, pod)
	}
	env := expandEnv(signerSpec(&pod.Spec))
	env[podcontract.EnvArgsDigest] = h.ArgumentsDigest
	term, err := k.terminateWith(pod, o, env, h.Arguments, key)
	if err != nil {
		return nil, err
	}
	return term, k.endWarm(ctx, pod, term)
}

// refuseHandover plays the runner refusing a Handover it cannot authenticate: the body does
// not run; the frame, unsigned, says HandoverRefused; the Pod (stdin closed) is spent.
func (k *Kubelet) refuseHandover(ctx context.Context, pod *corev1.Pod) (*corev1.ContainerStateTerminated, error) {
	f := frame.Frame{ExitCode: frame.ExitRunnerError, Reason: frame.ReasonHandoverRefused,
		Error: "the handover is not signed by the operator for this Pod, so the tool was not run"}
	msg, _, err := frame.Encoder{}.Encode(f)
	if err != nil {
		return nil, err
	}
	now := metav1.Now()
	term := &corev1.ContainerStateTerminated{ExitCode: frame.ExitRunnerError, Reason: "Error", Message: string(msg), StartedAt: now, FinishedAt: now}
	return term, k.endWarm(ctx, pod, term)
}

// endWarm writes the warm Pod's end: its tool container terminated as term says.
func (k *Kubelet) endWarm(ctx context.Context, pod *corev1.Pod, term *corev1.ContainerStateTerminated) error {
	pod.Status.Phase = corev1.PodSucceeded
	if term.ExitCode != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.ContainerStatuses = endedStatuses(pod, term)
	return k.writer().Status().Update(ctx, pod)
}

// bindSessionPod binds a session Pod to the simulated node, as the scheduler would: a bound
// Pod's deletion is graceful (it stays, being deleted, until its containers have stopped:
// kubelet_termination.go), which is what the operator waits for before it records an end
// the runner did not vouch for. Session pool Pods are bound too (a claim makes one a
// session Pod); warm pool Pods stay unbound (deleted at once).
func (k *Kubelet) bindSessionPod(ctx context.Context, pod *corev1.Pod) error {
	if !sessionOrSessionPool(pod) || pod.Spec.NodeName != "" {
		return nil
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: "simulated-node"}}
	if err := k.SubResource("binding").Create(ctx, pod, binding); err != nil {
		return err
	}
	return k.Get(ctx, client.ObjectKeyFromObject(pod), pod)
}

// sessionOrSessionPool: a session Pod, or a session pool Pod (it carries the session CA).
func sessionOrSessionPool(o client.Object) bool {
	return o.GetLabels()[podcontract.LabelSessionPod] != "" || o.GetAnnotations()[podcontract.AnnotationSessionCA] != ""
}
