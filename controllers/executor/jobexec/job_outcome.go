package jobexec

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/controllers/executor/frametrust"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// imageErrorsFinal are container waiting reasons that no amount of waiting will fix.
var imageErrorsFinal = map[string]bool{"ErrImageNeverPull": true, "InvalidImageName": true}

// podReasonsKnown are the Pod-level failures whose reason says more than anything the
// killed container left (it only shows exit 137, or a frame written after SIGTERM).
var podReasonsKnown = map[string]bool{pipeline.TerminationDeadlineExceeded: true, pipeline.TerminationEvicted: true}

// AttemptView is what the operator read of one attempt: its Job, the Job's Pod (nil when
// none was found) and whether the operator's own deadline for the attempt has passed.
type AttemptView struct {
	Job          *batchv1.Job
	Pod          *corev1.Pod
	Attempt      int
	PastDeadline bool
	// Now is the operator's clock: a body's container that ended longer than signerGrace
	// ago without the signer's is read without a frame.
	Now time.Time
	// Features read the endings only a feature knows from the Pod (feature.List; nil: none).
	Features feature.PodClassifier
}

// signerGrace is how long after the body's container ended the operator waits for the
// signer's, which ends right after it in every ending the runner sees (its frame follows
// the body side's last message): past it, the signer is stuck (its body side never reached
// it), and the attempt is read from the kubelet alone.
const signerGrace = 10 * time.Second

// AttemptOutcome decides whether the attempt has ended, and how. It is a pure function of
// the view but for read. Only a frame that read verified becomes a Report: any other
// ending (no Pod, a Pod failed for a reason without a result of its own, a container that
// ended without a frame or with one that does not verify) carries no exit code or output,
// and Normalize makes it ExecutionLost or ResultUnreadable.
func AttemptOutcome(ctx context.Context, v AttemptView, read frametrust.Reader) (pipeline.Outcome, bool) {
	base := pipeline.Outcome{Attempt: v.Attempt, Started: containerStarted(v.Pod)}
	if o, ok := podOutcome(ctx, v.Pod, v.Now, base, read, v.Features); ok {
		if killedAtJobDeadline(o, v.Job) {
			o.TerminationReason = pipeline.TerminationDeadlineExceeded
		}
		return o, true
	}
	o := base
	switch job := v.Job; {
	case !job.DeletionTimestamp.IsZero() && !v.PastDeadline:
		// Past the deadline a Job being deleted is the operator's own stop (stopJob deletes
		// it before the status write that records DeadlineExceeded): a restart between the
		// two must not turn the deadline into JobDeleted (and retry it as such).
		o.TerminationReason = pipeline.TerminationJobDeleted
	case jobFailedReason(job) != "":
		// BackoffLimitExceeded with no Pod (force-deleted, its node lost), PodFailurePolicy,
		// DeadlineExceeded before the Pod reported: only the last has a result of its own.
		o.TerminationReason, o.Started = jobFailedReason(job), o.Started || v.Pod == nil
	case jobComplete(job):
		// Complete without a Pod to read: the Pod was deleted before its status was seen.
		o.TerminationReason, o.Started = pipeline.TerminationPodDeleted, true
	case v.PastDeadline:
		o.TerminationReason = pipeline.TerminationDeadlineExceeded
	default:
		return pipeline.Outcome{}, false
	}
	return o, true
}

// killedAtJobDeadline: the Job failed DeadlineExceeded and its Pod's tool container was
// killed (the runner reports the body ended by a signal, or the container died before the
// runner could write its frame), not ended on its own. The Job controller enforces
// activeDeadlineSeconds by deleting the Pod: the kill reaches the body as SIGTERM (then
// SIGKILL), and the Pod carries no DeadlineExceeded reason of its own (only the kubelet's
// own Pod deadline sets that). Read from the frame alone, such an attempt ended
// NonZeroExit "terminated by signal SIGTERM" whenever the Pod's status reached the operator
// before it saw the Job's (the real-cluster chaos run: an operator restarting mid-attempt);
// a retry policy on NonZeroExit would then have run a body that timed out again. A body
// that exited by itself (an exit code, no signal) keeps its result, even when the Job
// controller, late, marked the Job past its deadline; OOM kills and unreadable frames
// keep their own reasons.
func killedAtJobDeadline(o pipeline.Outcome, job *batchv1.Job) bool {
	if job == nil || jobDeadlineReason(job) != pipeline.TerminationDeadlineExceeded || o.Unreadable != "" {
		return false
	}
	if !o.Started || o.TerminationReason == pipeline.TerminationOOMKilled || podReasonsKnown[o.TerminationReason] {
		return false
	}
	if o.Report != nil {
		return o.Report.Signal != ""
	}
	return o.ContainerExitCode != nil
}

// jobDeadlineReason is the reason the Job fails for: its Failed condition's, else its
// FailureTarget condition's. The Job controller (Kubernetes 1.31 and later) marks a Job
// past activeDeadlineSeconds FailureTarget/DeadlineExceeded, then deletes its Pod, and sets
// Failed only once the Pod is gone: the Pod's SIGTERM end can be seen in between.
func jobDeadlineReason(job *batchv1.Job) string {
	if r := jobFailedReason(job); r != "" {
		return r
	}
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailureTarget && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

// podOutcome reads a Pod-level failure, the tool container's end, an image that will
// never be pulled, or a Pod that ended without a tool container that did.
func podOutcome(ctx context.Context, pod *corev1.Pod, now time.Time, base pipeline.Outcome, read frametrust.Reader, features feature.PodClassifier) (pipeline.Outcome, bool) {
	if pod == nil {
		return pipeline.Outcome{}, false
	}
	reason := podReason(pod)
	cs := podspec.ToolContainerStatus(pod)
	terminated := cs != nil && cs.State.Terminated != nil && !neverCreated(cs)
	switch {
	case pod.Status.Phase == corev1.PodFailed && podReasonsKnown[reason]:
		base.TerminationReason = reason
		return base, true
	case terminated && SignerPending(pod, now) > 0:
		return pipeline.Outcome{}, false // the signer's frame is on its way
	case terminated:
		o := terminatedOutcome(ctx, cs.State.Terminated, signerTermination(pod), base, read)
		if o.Report == nil && pod.Status.Phase == corev1.PodFailed && reason != "" && o.TerminationReason != pipeline.TerminationOOMKilled {
			o.TerminationReason = reason // NodeShutdown says more than the container's Error
		}
		return o, true
	}
	if features != nil {
		if reason, detail, ended := features.ClassifyPod(pod); ended {
			base.TerminationReason, base.Started, base.Detail = reason, false, detail
			return base, true
		}
	}
	for _, s := range append(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses...) {
		if w := s.State.Waiting; w != nil && imageErrorsFinal[w.Reason] {
			base.TerminationReason, base.Started = w.Reason, false
			return base, true
		}
	}
	if cs != nil && neverCreated(cs) {
		// The Pod ended before its tool container was created: ImageNeverStarted.
		base.TerminationReason, base.Started = "", false
		return base, true
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		// Ended, but the tool container never reported terminating (rejected at admission,
		// shut down with its node): there is nothing to read.
		base.TerminationReason = reason
		if reason == "" {
			base.TerminationReason = "Pod" + string(pod.Status.Phase)
		}
		return base, true
	}
	return pipeline.Outcome{}, false
}

// terminatedOutcome turns the body container's terminated state and the signer's frame
// into the normaliser's input. The kubelet's reason (OOMKilled) and exit code are kept;
// the exit code and output of the result come only from a frame that read verified, whose
// exit code is the one the kubelet saw the body's container end with (the body side exits
// with the tool's code). Nothing the body's container wrote is read: its termination
// message is the body's.
func terminatedOutcome(ctx context.Context, t, signer *corev1.ContainerStateTerminated, base pipeline.Outcome, read frametrust.Reader) pipeline.Outcome {
	o := base
	o.Started, o.TerminationReason, o.ContainerExitCode = true, t.Reason, &t.ExitCode
	if t.Reason == containerStatusUnknown || signer == nil || signer.Message == "" || signer.Reason == containerStatusUnknown {
		// The body's container was lost by the runtime, or the signer ended without a frame
		// (killed after the grace period, or stuck): nothing vouches for the run.
		return o
	}
	f, err := read(ctx, signer.Message)
	switch {
	case err != nil:
		o.Unreadable = err.Error()
	case f.Reason == frame.ReasonBodyLost:
		// The signer vouches only that the body side went away: the kubelet says how.
	case f.Reason == frame.ReasonDeadlineExceeded:
		// The runner stopped the tool at its timeout (counted from the body's start; the
		// Pod's activeDeadlineSeconds adds the start allowance), or the signer's own clock
		// saw it run past: the same reason as the kubelet's kill at the Pod's deadline. The
		// body's container may have ended with any code by then (a SIGKILL, a body side that
		// never reported): the signer's word stands.
		o.Report, o.TerminationReason = ReportOf(f), pipeline.TerminationDeadlineExceeded
	case f.ExitCode != int(t.ExitCode):
		o.Unreadable = fmt.Sprintf("the runner reports exit code %d, but the body's container ended with %d", f.ExitCode, t.ExitCode)
	default:
		o.Report = ReportOf(f)
	}
	return o
}

// signerTermination is the signer container's terminated state (nil while it runs).
func signerTermination(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if cs := podspec.ContainerStatus(pod, podcontract.SignerContainerName); cs != nil {
		return cs.State.Terminated
	}
	return nil
}

// SignerPending is how much longer to wait for the signer's end, once the body's container
// ended: 0 when it has ended, the Pod has, or signerGrace is over.
func SignerPending(pod *corev1.Pod, now time.Time) time.Duration {
	if pod == nil {
		return 0
	}
	cs := podspec.ToolContainerStatus(pod)
	if cs == nil || cs.State.Terminated == nil || signerTermination(pod) != nil ||
		pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return 0
	}
	return max(0, cs.State.Terminated.FinishedAt.Add(signerGrace).Sub(now))
}

// ReportOf is what a verified frame vouches for.
func ReportOf(f frame.Frame) *pipeline.Report {
	stdout, _ := f.StdoutData() // validated by the decoder
	r := &pipeline.Report{ExitCode: f.ExitCode, Signal: f.Signal, Stdout: stdout,
		StdoutTruncated: f.Truncated, StdoutTotalBytes: f.StdoutBytes, StderrTail: f.StderrTail, OutputLeftOpen: f.OutputLeftOpen,
		Redactions: f.Redactions, RunnerReason: f.Reason}
	if f.Reason != "" {
		r.StderrTail = f.Reason + ": " + f.Error
	}
	return r
}

// podReason is the Pod's own reason or, for a Pod a disruption ended (node lost, taint
// eviction, preemption, graceful node shutdown), its DisruptionTarget condition's reason.
func podReason(pod *corev1.Pod) string {
	if pod.Status.Reason != "" {
		return pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

// containerStarted reports whether the tool container ever ran.
func containerStarted(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	cs := podspec.ToolContainerStatus(pod)
	return cs != nil && (cs.State.Running != nil || cs.State.Terminated != nil && !neverCreated(cs) ||
		cs.LastTerminationState.Terminated != nil || (cs.Started != nil && *cs.Started))
}

// containerStatusUnknown is the reason the kubelet gives a container it has no runtime
// status for when the Pod ends (k8s.io/kubernetes/pkg/kubelet/container).
const containerStatusUnknown = "ContainerStatusUnknown"

// neverCreated: the tool container's terminated state is the kubelet's stand-in for a
// container the runtime never created. When a Pod ends while a container still waits (an
// image that cannot be pulled, at the Job's deadline), the kubelet's status manager
// replaces the waiting state with Terminated{ContainerStatusUnknown, exit 137} and keeps
// the rest of the old status: no container ID, no start time. Any container the runtime
// created has an ID in its status, so the body cannot have run.
func neverCreated(cs *corev1.ContainerStatus) bool {
	t := cs.State.Terminated
	return t != nil && t.Reason == containerStatusUnknown && cs.ContainerID == "" && t.StartedAt.IsZero()
}

func jobFailedReason(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			if c.Reason == "" {
				return "JobFailed"
			}
			return c.Reason
		}
	}
	return ""
}

// PodEnded reports whether the Pod shows an outcome podOutcome can read.
func PodEnded(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	if cs := podspec.ToolContainerStatus(pod); cs != nil && cs.State.Terminated != nil {
		return true
	}
	return pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
}

// jobEnded reports whether the Job is finished or going away.
func jobEnded(job *batchv1.Job) bool {
	return !job.DeletionTimestamp.IsZero() || jobFailedReason(job) != "" || jobComplete(job)
}

func jobComplete(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
