package podspec

import (
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

const (
	// LabelKueueQueue is Kueue's label naming the LocalQueue a Job is submitted to
	// (kueue.x-k8s.io/queue-name). Kueue's Job webhook, which would suspend a labelled Job,
	// is not relied on: the builder creates the Job suspended itself (docs/bursts.md).
	LabelKueueQueue = "kueue.x-k8s.io/queue-name"
	// LabelStartGate on a Job created suspended names what resumes it: StartGateKueue or
	// StartGateOperator (the operator's own --max-concurrent-starts bound).
	LabelStartGate = "toolgate.dev/start-gate"
	// StartGateKueue: Kueue admits the Job (it carries LabelKueueQueue).
	StartGateKueue = "kueue"
	// StartGateOperator: the operator resumes the Job when a start slot is free.
	StartGateOperator = "operator"
	// AnnotationAdmissionMaxWait on a gated Job is how long its attempt may wait for
	// admission (a Go duration): past it the call ends NotAdmitted. Recorded on the Job at
	// create, so a restart (or a scope edited meanwhile) keeps the bound the Job began with.
	AnnotationAdmissionMaxWait = "toolgate.dev/admission-max-wait"
)

// Admission says that an attempt's Job waits, created suspended, for admission.
type Admission struct {
	// Queue is the Kueue LocalQueue in the call's namespace; empty: the operator's own start
	// bound resumes the Job.
	Queue string
	// MaxWait bounds the wait for admission.
	MaxWait time.Duration
}

// withAdmission creates job suspended behind a: labelled for Kueue (or the operator's start
// bound) and annotated with its bound. Pure; a nil a leaves the Job as it is.
func withAdmission(job *batchv1.Job, a *Admission) *batchv1.Job {
	if a == nil {
		return job
	}
	job.Spec.Suspend = ptr.To(true)
	// The Job's own maps: the Pod template shares them, and its Pods must not carry the
	// queue (Kueue's Pod integration, where enabled, would gate them a second time).
	job.Labels, job.Annotations = maps.Clone(job.Labels), maps.Clone(job.Annotations)
	gate := StartGateOperator
	if a.Queue != "" {
		gate = StartGateKueue
		job.Labels[LabelKueueQueue] = a.Queue
	}
	job.Labels[LabelStartGate] = gate
	job.Annotations[AnnotationAdmissionMaxWait] = a.MaxWait.String()
	return job
}

// JobAdmission is the admission a Job was created behind (ok false: none, it started at
// once): the inverse of the builder's, read from the Job alone.
func JobAdmission(job *batchv1.Job) (a Admission, ok bool) {
	gate := job.Labels[LabelStartGate]
	if gate != StartGateKueue && gate != StartGateOperator {
		return Admission{}, false
	}
	a.Queue = job.Labels[LabelKueueQueue]
	a.MaxWait, _ = time.ParseDuration(job.Annotations[AnnotationAdmissionMaxWait])
	return a, true
}

// JobSuspended reports whether the Job is suspended (spec.suspend).
func JobSuspended(job *batchv1.Job) bool { return ptr.Deref(job.Spec.Suspend, false) }
