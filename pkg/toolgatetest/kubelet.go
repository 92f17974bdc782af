package toolgatetest

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Outcome scripts what the simulated kubelet makes of one tool Pod.
type Outcome struct {
	// Echo makes the tool print its arguments (the frozen bytes it received) — the default
	// when no script matches.
	Echo bool
	// Stdout is what the tool prints (ignored with Echo).
	Stdout []byte
	// Stderr is what the tool writes to stderr.
	Stderr string
	// ExitCode is the tool's exit code.
	ExitCode int32
	// Signal names the signal that killed the tool (e.g. "SIGKILL"); ExitCode is then 128+N.
	Signal string
	// Reason overrides the container's terminated reason (e.g. "OOMKilled").
	Reason string
	// NoFrame ends the container without a runner frame (killed before it could write).
	NoFrame bool
	// DeadlineExceeded plays activeDeadlineSeconds passing: the Job fails DeadlineExceeded
	// and its Pod is failed, its container killed.
	DeadlineExceeded bool
	// Waiting leaves the container waiting with this reason (e.g. "ErrImageNeverPull",
	// "ImagePullBackOff"): the image never starts.
	Waiting string
	// WaitingMessage is the Waiting state's message; default "simulated: <Waiting>".
	WaitingMessage string
	// Evicted fails the Pod with reason Evicted.
	Evicted bool
	// PodReason fails the Pod as a whole with this reason, as the kubelet does on a
	// graceful node shutdown ("Terminated", "NodeShutdown") or an admission failure
	// ("UnexpectedAdmissionError"); its tool container is killed without a frame.
	PodReason string
	// LosePod plays a Pod that vanishes before it reports (force-deleted, its node lost):
	// the Pod is deleted and the Job fails BackoffLimitExceeded, as the Job controller does.
	LosePod bool
	// Forge plays a body that wrote its own frame to the termination message (Stdout,
	// ExitCode) and killed the runner: a well-formed frame the Job's key did not sign.
	Forge bool
	// Bomb delivers, in the Pod log, a well-formed frame whose stdout inflates to
	// BombBytes, behind a pointer that announces its true size: signed with the Job's key
	// (a runner that ignored the call's output limit) or, with Forge, unsigned.
	Bomb bool
	// Hold leaves the Pod running until Kubelet.Finish is called.
	Hold bool
	// IgnoreSIGTERM plays a body that traps SIGTERM and runs on: once its Pod is deleted it
	// stays, being deleted, its container running, until Kubelet.EndGrace plays the end of
	// its grace period — or for ever, as a Pod on a node that stopped reporting does
	// (kubelet_termination.go).
	IgnoreSIGTERM bool
	// After keeps the Pod running (its container started) that long before the outcome
	// plays: a body that takes time, during which the operator may be away. It counts from
	// the Job's status.startTime (whole seconds), so a Kubelet that restarts still plays it.
	After time.Duration
}

// BombBytes is the stdout an Outcome.Bomb frame inflates to (from about 16 KiB of gzip,
// written by frame.Encoder as a runner would that ignored the limit).
const BombBytes = 16 << 20

// Kubelet plays the Job controller and the kubelet for toolgate's Jobs in envtest, which
// has neither: for each Job it creates the Pod and writes the Pod and Job status a real
// cluster would, with the runner's frame in the termination message (or, for a large result,
// in the log, which Logs serves in place of pods/log).
type Kubelet struct {
	client.Client
	mu       sync.Mutex
	scripts  map[string]Outcome
	attempts map[string][]Outcome
	starts   []PodStart
	logs     map[types.NamespacedName][]byte
	logReads map[types.NamespacedName][]LogRead
	pods     int
	// live reads around the manager's cache (kubelet_ttl.go), set by SetupWithManager.
	live client.Reader
	// handovers are the warm Pods' handovers (kubelet_warm.go), in order.
	handovers []WarmHandover
	// poolPaused leaves new pool Pods Pending (PausePool).
	poolPaused bool
	// sessionCalls are the session Pods' handovers (kubelet_session.go), in order;
	// sessionSeen the calls and attempts each Pod ran; sessionTurns each Pod's turn.
	sessionCalls []SessionHandover
	sessionSeen  map[types.UID]map[string]bool
	sessionTurns map[types.UID]*sync.Mutex
	// ws are the session workspaces' claims and files (kubelet_workspace.go).
	ws workspaces
	// trapsSIGTERM are the Pods whose bodies ignore SIGTERM (kubelet_termination.go).
	trapsSIGTERM map[types.UID]bool
	// clock stamps a Job's status.startTime and completionTime (SetClock); nil: real time.
	clock clock.PassiveClock
}

// SetClock makes the Kubelet stamp each Job's status.startTime (the Job controller's
// admission time of a resumed Job) and completionTime with c; nil: the real time. A spec that steps the
// operator's fake clock past a wait sets it, so that both agree when the Job is admitted;
// Outcome.After still counts in real time from that stamp.
func (k *Kubelet) SetClock(c clock.PassiveClock) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.clock = c
}

// now is the Job controller's time: status.startTime and completionTime.
func (k *Kubelet) now() metav1.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.clock != nil {
		return metav1.NewTime(k.clock.Now())
	}
	return metav1.Now()
}

// LogRead is one read of a simulated Pod's log, with the bounds the reader asked for.
type LogRead struct {
	TailLines, LimitBytes int64
}

// PodStart is one Pod the Kubelet created for a Job: one start of a tool body.
type PodStart struct {
	Namespace, Pod, Job string
	JobUID              types.UID
	// Call is the call's name (the Job's toolgate.dev/call-name annotation), CallUID the
	// Job's controller (the call).
	Call    string
	CallUID types.UID
	// Attempt is the Job's toolgate.dev/attempt label.
	Attempt int
	At      time.Time
}

// NewKubelet returns a Kubelet using c (a client with toolgate's scheme).
func NewKubelet(c client.Client) *Kubelet {
	return &Kubelet{Client: c, scripts: map[string]Outcome{}, attempts: map[string][]Outcome{},
		logs: map[types.NamespacedName][]byte{}, logReads: map[types.NamespacedName][]LogRead{}}
}

// Script sets the outcome of every Pod of the named tool (its model-facing name).
func (k *Kubelet) Script(tool string, o Outcome) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.scripts[tool] = o
}

// ScriptAttempts sets the outcome of each attempt of the named tool's calls: attempt i
// plays outcomes[i-1], and attempts past the last play the last. It wins over Script.
func (k *Kubelet) ScriptAttempts(tool string, outcomes ...Outcome) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.attempts[tool] = append([]Outcome(nil), outcomes...)
}

// PodsStarted counts the Pods the Kubelet created, in every namespace it sees (one per Job attempt).
func (k *Kubelet) PodsStarted() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods
}

// PodStarts returns every Pod the Kubelet created so far, in order.
func (k *Kubelet) PodStarts() []PodStart {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]PodStart(nil), k.starts...)
}

// SetupWithManager runs the Kubelet as a controller of toolgate's Jobs, with the TTL
// controller and the garbage collector's foreground deletion (kubelet_ttl.go).
func (k *Kubelet) SetupWithManager(mgr ctrl.Manager) error {
	if err := k.setupTTL(mgr); err != nil {
		return err
	}
	if err := k.setupWarm(mgr); err != nil {
		return err
	}
	if err := k.setupWorkspaces(mgr); err != nil {
		return err
	}
	if err := k.setupTermination(mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&batchv1.Job{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[podcontract.LabelManagedBy] == podcontract.ManagedByValue
		}))).
		Named("simulated-kubelet").
		// A kubelet reports again within a second whatever failed before (an API server
		// away): the default per-item backoff would grow to minutes over an outage.
		WithOptions(controller.Options{RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](
			5*time.Millisecond, time.Second)}).
		Complete(k)
}

// Reconcile starts a Job's Pod once and plays its scripted outcome.
func (k *Kubelet) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &batchv1.Job{}
	if err := k.Get(ctx, req.NamespacedName, job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !job.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	o := k.scriptFor(job)
	if job.Status.StartTime != nil {
		return k.playAfter(ctx, job, o)
	}
	if ptr.Deref(job.Spec.Suspend, false) {
		// As the Job controller: no Pod for a suspended Job (one waiting for Kueue or the
		// operator's start bound). Resuming it is an update, which brings it back here.
		return ctrl.Result{}, nil
	}
	// The operator's cache (which StartManager shares) keeps no Pod template
	// (toolcall.TransformJob): read the Job whole before making its Pod.
	if err := k.reader().Get(ctx, req.NamespacedName, job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !job.DeletionTimestamp.IsZero() || job.Status.StartTime != nil || ptr.Deref(job.Spec.Suspend, false) {
		return ctrl.Result{}, nil
	}
	if ready, err := k.workspaceReady(ctx, job); err != nil || !ready {
		return ctrl.Result{RequeueAfter: claimPoll}, err
	}
	o = k.workspaceOutcome(job, o)
	o, err := k.credentialOutcome(ctx, job, o)
	if err != nil {
		return ctrl.Result{}, err
	}
	pod, err := k.createPod(ctx, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	k.noteSIGTERM(pod, o)
	now := k.now()
	job.Status.StartTime = &now
	job.Status.Active = 1
	if err := k.Status().Update(ctx, job); err != nil {
		return ctrl.Result{}, err
	}
	if o.After > 0 && !o.Hold {
		if err := k.play(ctx, job, pod, Outcome{Hold: true}); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: o.After}, nil
	}
	return ctrl.Result{}, k.play(ctx, job, pod, o)
}

// playAfter plays an Outcome.After once its time has come, for a Job whose Pod runs.
func (k *Kubelet) playAfter(ctx context.Context, job *batchv1.Job, o Outcome) (ctrl.Result, error) {
	if o.After <= 0 || o.Hold || jobFinished(job) {
		return ctrl.Result{}, nil
	}
	if wait := time.Until(job.Status.StartTime.Add(o.After)); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	pod := &corev1.Pod{}
	if err := k.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: podName(job)}, pod); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pod.DeletionTimestamp.IsZero() || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, k.play(ctx, job, pod, o)
}

func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// Finish ends a held Pod (Outcome.Hold) of the named Job with o.
func (k *Kubelet) Finish(ctx context.Context, namespace, jobName string, o Outcome) error {
	job := &batchv1.Job{}
	if err := k.Get(ctx, types.NamespacedName{Namespace: namespace, Name: jobName}, job); err != nil {
		return err
	}
	pod := &corev1.Pod{}
	// Whole, from the API server: the operator's cache keeps no Pod spec (TransformPod).
	if err := k.reader().Get(ctx, types.NamespacedName{Namespace: namespace, Name: podName(job)}, pod); err != nil {
		return err
	}
	o.Hold = false
	return k.play(ctx, job, pod, o)
}

func (k *Kubelet) scriptFor(job *batchv1.Job) Outcome {
	k.mu.Lock()
	defer k.mu.Unlock()
	// The annotation holds the exact tool name; the label may be a hash of it.
	tool := job.Annotations[podcontract.AnnotationTool]
	if list := k.attempts[tool]; len(list) > 0 {
		attempt, _ := strconv.Atoi(job.Labels[podcontract.LabelAttempt])
		return list[min(max(attempt, 1), len(list))-1]
	}
	if o, ok := k.scripts[tool]; ok {
		return o
	}
	return Outcome{Echo: true}
}

func podName(job *batchv1.Job) string { return PodName(job.Name) }

func (k *Kubelet) createPod(ctx context.Context, job *batchv1.Job) (*corev1.Pod, error) {
	tmpl := job.Spec.Template
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: podName(job), Namespace: job.Namespace,
			Labels: tmpl.Labels, Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = "simulated-node"
	err := k.Create(ctx, pod)
	if apierrors.IsAlreadyExists(err) {
		return pod, k.reader().Get(ctx, client.ObjectKeyFromObject(pod), pod)
	}
	if err == nil {
		start := PodStart{Namespace: pod.Namespace, Pod: pod.Name, Job: job.Name, JobUID: job.UID,
			Call: job.Annotations[podcontract.AnnotationCallName], At: time.Now()}
		start.Attempt, _ = strconv.Atoi(job.Labels[podcontract.LabelAttempt])
		if owner := metav1.GetControllerOf(job); owner != nil {
			start.CallUID = owner.UID
		}
		k.mu.Lock()
		k.pods++
		k.starts = append(k.starts, start)
		k.mu.Unlock()
	}
	return pod, err
}

// play writes the Pod's status (and the Job's, as the Job controller would) for o.
func (k *Kubelet) play(ctx context.Context, job *batchv1.Job, pod *corev1.Pod, o Outcome) error {
	ended := false
	switch {
	case o.Waiting != "":
		msg := o.WaitingMessage
		if msg == "" {
			msg = "simulated: " + o.Waiting
		}
		// The body's container waits; the signer runs, waiting for the body side.
		pod.Status.ContainerStatuses = runningStatuses(pod, false)
		pod.Status.ContainerStatuses[1].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: o.Waiting, Message: msg}}
		pod.Status.ContainerStatuses[1].Started = ptr.To(false)
		pod.Status.Phase = corev1.PodPending
	case o.Hold:
		pod.Status.ContainerStatuses = runningStatuses(pod, true)
		pod.Status.Phase = corev1.PodRunning
		pod.Status.PodIP = SimulatedPodIP(pod.UID)
		pod.Status.PodIPs = []corev1.PodIP{{IP: pod.Status.PodIP}}
	case o.LosePod:
		return k.losePod(ctx, job, pod)
	case o.DeadlineExceeded, o.Evicted, o.PodReason != "":
		return k.failPod(ctx, job, pod, o)
	default:
		term, err := k.terminate(ctx, pod, o)
		if err != nil {
			return err
		}
		pod.Status.ContainerStatuses = endedStatuses(pod, term)
		pod.Status.Phase = corev1.PodSucceeded
		if term.ExitCode != 0 {
			pod.Status.Phase = corev1.PodFailed
		}
		ended = true
	}
	if err := k.Status().Update(ctx, pod); err != nil {
		return err
	}
	if ended {
		return k.endJob(ctx, job, pod.Status.Phase == corev1.PodSucceeded, "BackoffLimitExceeded")
	}
	return nil
}

func (k *Kubelet) failPod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod, o Outcome) error {
	pod.Status.Phase = corev1.PodFailed
	reason := "DeadlineExceeded"
	switch {
	case o.Evicted:
		reason = "Evicted"
	case o.PodReason != "":
		reason = o.PodReason
	}
	pod.Status.Reason = reason
	// The kubelet kills the containers (exit 137, no frame) and fails the Pod with a reason.
	pod.Status.ContainerStatuses = endedStatuses(pod, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"})
	if err := k.Status().Update(ctx, pod); err != nil {
		return err
	}
	if !o.DeadlineExceeded {
		return k.endJob(ctx, job, false, "BackoffLimitExceeded")
	}
	return k.endJob(ctx, job, false, "DeadlineExceeded")
}

// losePod deletes the Pod at once (kubectl delete --grace-period=0 --force) and fails the
// Job as the Job controller does when its only Pod is gone without a result.
func (k *Kubelet) losePod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	if err := k.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		return err
	}
	return k.endJob(ctx, job, false, "BackoffLimitExceeded")
}

// endJob writes the terminal Job status a real Job controller writes.
func (k *Kubelet) endJob(ctx context.Context, job *batchv1.Job, succeeded bool, failReason string) error {
	now := k.now()
	job.Status.Active = 0
	if job.Status.StartTime == nil {
		job.Status.StartTime = &now
	}
	if succeeded {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = append(job.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now, LastProbeTime: now})
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = append(job.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: failReason, LastTransitionTime: now, LastProbeTime: now},
			batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: failReason, LastTransitionTime: now, LastProbeTime: now})
	}
	if err := k.Status().Update(ctx, job); err != nil {
		return fmt.Errorf("simulated Job status: %w", err)
	}
	return nil
}
