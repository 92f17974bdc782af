package toolgatetest

import (
	"context"
	"errors"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/toolgate/toolgate/pkg/podcontract"
)

// ttlController plays two controllers envtest does not run, for toolgate's Jobs:
//   - the TTL-after-finished controller: a finished Job with ttlSecondsAfterFinished is
//     deleted that long after it finished, with foreground propagation (as the real one
//     deletes);
//   - the garbage collector's foreground deletion: the API server marks such a Job with the
//     foregroundDeletion finalizer; the collector deletes its Pods first and only then
//     removes that finalizer, so the Pod (and the result it carries) goes before the Job.
//
// It uses the real clock; Kubelet.ExpireFinishedJobs plays it at a given time, for suites
// that step a fake clock.
type ttlController struct{ k *Kubelet }

func (k *Kubelet) setupTTL(mgr ctrl.Manager) error {
	k.mu.Lock()
	k.live = mgr.GetAPIReader()
	k.mu.Unlock()
	return ctrl.NewControllerManagedBy(mgr).
		For(&batchv1.Job{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[podcontract.LabelManagedBy] == podcontract.ManagedByValue
		}))).
		Owns(&corev1.Pod{}).
		Named("simulated-ttl-after-finished").
		Complete(&ttlController{k: k})
}

// reader reads the API server directly, so that a deletion is seen as soon as it is made.
// SetClient gives the Kubelet the client of a new manager (StartManager): warm handovers a
// stopped manager's executor left running read it concurrently (writer).
func (k *Kubelet) SetClient(c client.Client) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.Client = c
}

// writer is the Kubelet's current client, read under its lock (SetClient may swap it).
func (k *Kubelet) writer() client.Client {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.Client
}

func (k *Kubelet) reader() client.Reader {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.live != nil {
		return k.live
	}
	return k.Client
}

// Reconcile expires one Job at the real time and collects a foreground deletion. It reads
// the Job from the cache (its watch brings every change here), so that the many Jobs with
// neither a TTL nor a foreground deletion cost the API server nothing.
func (t *ttlController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &batchv1.Job{}
	if err := t.k.Get(ctx, req.NamespacedName, job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if job.Spec.TTLSecondsAfterFinished == nil && !slices.Contains(job.Finalizers, metav1.FinalizerDeleteDependents) {
		return ctrl.Result{}, nil
	}
	wait, err := t.k.expire(ctx, job, time.Now())
	if err != nil || wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, err
	}
	return ctrl.Result{}, t.k.collectForeground(ctx, job)
}

// ExpireFinishedJobs plays the TTL-after-finished controller once at now (and the garbage
// collector after it): every finished toolgate Job in the namespace whose
// ttlSecondsAfterFinished has passed by now is deleted with foreground propagation, its
// Pods before it. For suites that step a fake clock past a TTL.
func (k *Kubelet) ExpireFinishedJobs(ctx context.Context, namespace string, now time.Time) error {
	jobs := &batchv1.JobList{}
	if err := k.reader().List(ctx, jobs, client.InNamespace(namespace),
		client.MatchingLabels{podcontract.LabelManagedBy: podcontract.ManagedByValue}); err != nil {
		return err
	}
	var errs []error
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if wait, err := k.expire(ctx, job, now); err != nil || wait > 0 {
			errs = append(errs, err)
			continue
		}
		if err := k.reader().Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		errs = append(errs, k.collectForeground(ctx, job))
	}
	return errors.Join(errs...)
}

// expire deletes a finished Job whose TTL has passed by now (foreground propagation); it
// returns how long until the TTL passes for a Job not yet due, zero otherwise.
func (k *Kubelet) expire(ctx context.Context, job *batchv1.Job, now time.Time) (time.Duration, error) {
	finished := finishTime(job)
	if job.Spec.TTLSecondsAfterFinished == nil || finished.IsZero() || !job.DeletionTimestamp.IsZero() {
		return 0, nil
	}
	due := finished.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if now.Before(due) {
		return due.Sub(now), nil
	}
	err := k.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground),
		client.Preconditions{UID: &job.UID})
	return 0, client.IgnoreNotFound(err)
}

// collectForeground is the garbage collector's part of a foreground deletion: the Job's
// Pods are deleted, and once none is left the foregroundDeletion finalizer is removed (the
// Job then goes when its other finalizers, toolgate's, are released).
func (k *Kubelet) collectForeground(ctx context.Context, job *batchv1.Job) error {
	if job.DeletionTimestamp.IsZero() || !slices.Contains(job.Finalizers, metav1.FinalizerDeleteDependents) {
		return nil
	}
	pods := &corev1.PodList{}
	if err := k.reader().List(ctx, pods, client.InNamespace(job.Namespace)); err != nil {
		return err
	}
	remaining := 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !metav1.IsControlledBy(pod, job) {
			continue
		}
		remaining++
		// A running Pod's deletion is graceful: the API server keeps it until its kubelet
		// has stopped the containers, which this Kubelet plays (kubelet_termination.go).
		if pod.DeletionTimestamp.IsZero() {
			if err := k.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	if remaining > 0 {
		// Their events bring the Job back here (Owns) until none is left.
		if err := k.reader().List(ctx, pods, client.InNamespace(job.Namespace)); err != nil {
			return err
		}
		for i := range pods.Items {
			if metav1.IsControlledBy(&pods.Items[i], job) {
				return nil
			}
		}
	}
	patch := client.MergeFrom(job.DeepCopy())
	controllerutil.RemoveFinalizer(job, metav1.FinalizerDeleteDependents)
	return client.IgnoreNotFound(k.Patch(ctx, job, patch))
}

// finishTime is when a Job finished, as the TTL controller reads it: its completion time,
// else the time its Complete or Failed condition became true; zero while it runs.
func finishTime(job *batchv1.Job) time.Time {
	if job.Status.CompletionTime != nil {
		return job.Status.CompletionTime.Time
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
