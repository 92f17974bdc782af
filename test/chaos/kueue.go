package main

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/internal/podspec"
)

// kueue plays Kueue for the harness's namespace, in the harness's process (so it lives
// through every operator kill): every pass it lists the Jobs labelled with the LocalQueue it
// serves and resumes the oldest waiting ones (spec.suspend false, a merge patch carrying the
// Job's resourceVersion) while fewer than quota of them run (resumed, not deleted, not
// finished: their Pod has not ended). A Job becomes eligible only after its hold (the
// queue's other work): most Jobs wait a few seconds, one in five longer than the tool's
// timeout plus the operator's deadline grace, so a call whose timeout counted from its Job's
// creation rather than its admission would end DeadlineExceeded. Jobs of other queues (the
// unserved one) are never touched.
type kueue struct {
	c       client.Client
	ns      string
	queue   string
	quota   int
	longest time.Duration // the hold of one Job in five
	every   time.Duration

	mu        sync.Mutex
	admitted  int
	conflicts int
	maxActive int
	maxWait   time.Duration
	longHeld  int
	listErrs  int
}

// kueueFigures is what the simulated Kueue did, for the run's report.
type kueueFigures struct {
	Queue      string        `json:"queue"`
	Quota      int           `json:"quota"`
	Admitted   int           `json:"admitted"`
	Conflicts  int           `json:"conflicts"`
	MaxRunning int           `json:"maxRunning"`
	MaxWait    time.Duration `json:"maxWaitNanos"`
	// LongHeld counts the Jobs admitted after the longest hold (past the tool's timeout
	// plus the operator's grace).
	LongHeld   int `json:"longHeld"`
	ListErrors int `json:"listErrors"`
}

// run passes until ctx ends.
func (q *kueue) run(ctx context.Context) {
	t := time.NewTicker(q.every)
	defer t.Stop()
	for {
		q.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// hold is how long job waits before it may be admitted: from its uid, so a pass after a
// restart of nothing (the harness) decides the same.
func (q *kueue) hold(job *batchv1.Job) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(job.UID))
	n := h.Sum32()
	if n%5 == 0 {
		return q.longest
	}
	return time.Duration(n%3000) * time.Millisecond
}

func (q *kueue) pass(ctx context.Context) {
	jobs := &batchv1.JobList{}
	if err := q.c.List(ctx, jobs, client.InNamespace(q.ns), client.MatchingLabels{podspec.LabelKueueQueue: q.queue}); err != nil {
		q.mu.Lock()
		q.listErrs++ // the API server away: the next pass tries again
		q.mu.Unlock()
		return
	}
	running := 0
	var waiting []*batchv1.Job
	for i := range jobs.Items {
		j := &jobs.Items[i]
		switch {
		case !j.DeletionTimestamp.IsZero():
		case ptr.Deref(j.Spec.Suspend, false):
			waiting = append(waiting, j)
		case !finished(j):
			running++
		}
	}
	slices.SortFunc(waiting, func(a, b *batchv1.Job) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	now := time.Now()
	for _, j := range waiting {
		if running >= q.quota {
			break
		}
		if now.Sub(j.CreationTimestamp.Time) < q.hold(j) {
			continue
		}
		orig := j.DeepCopy()
		j.Spec.Suspend = ptr.To(false)
		err := q.c.Patch(ctx, j, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		q.mu.Lock()
		if err != nil {
			q.conflicts++ // changed or gone since the list (or the API server away): next pass
		} else {
			running++
			q.admitted++
			q.maxWait = max(q.maxWait, now.Sub(j.CreationTimestamp.Time))
			if now.Sub(j.CreationTimestamp.Time) >= q.longest {
				q.longHeld++
			}
		}
		q.maxActive = max(q.maxActive, running)
		q.mu.Unlock()
	}
}

func finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (q *kueue) figures() kueueFigures {
	q.mu.Lock()
	defer q.mu.Unlock()
	return kueueFigures{Queue: q.queue, Quota: q.quota, Admitted: q.admitted, Conflicts: q.conflicts, MaxRunning: q.maxActive,
		MaxWait: q.maxWait, LongHeld: q.longHeld, ListErrors: q.listErrs}
}
