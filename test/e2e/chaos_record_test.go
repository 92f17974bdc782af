/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/chaos/check"
)

// The real-cluster chaos run records what the cluster did through informers of its own
// (a separate connection from the operator's): every version of the run's ToolCalls, the
// tool Jobs and Pods of its calls (before the operator's tidyJobs deletes them after
// --job-retention), their Events and ToolCallApprovals, and the leader-election Lease.
// Informers relist after the API server restarts, so an object that came and went while the
// API server was away is seen at most in its last state: a Job or Pod created and deleted
// inside the outage would be missed (tool Jobs live for --job-retention, minutes, so none
// is); the final LIST (recorder.finalSweep) adds whatever the watch missed.

// seenPod is one tool Pod and whether its tool container ever started.
type seenPod struct {
	UID     types.UID
	Name    string
	Job     string
	JobUID  types.UID
	Call    string
	Attempt int
	// Started: the tool container was seen running or terminated after it started
	// (state.running, or state.terminated with a startedAt); StartedAt the first such time.
	Started   bool
	StartedAt time.Time
	// Restarts is the highest restartCount of the tool container (restartPolicy Never: 0).
	Restarts int32
}

// leaseSeen is one observed version of the operator's leader-election Lease.
type leaseSeen struct {
	At     time.Time
	Holder string
	Renew  time.Time
}

type recorder struct {
	prefix string // every call of the run has this name prefix

	mu        sync.Mutex
	versions  []check.CallVersion
	jobs      map[types.UID]*check.JobRecord
	pods      map[types.UID]*seenPod
	events    map[types.UID]*eventsv1.Event
	approvals map[string]*toolgatev1alpha1.ToolCallApproval
	leases    []leaseSeen
	// gaps counts watch errors that force a re-list (410 Gone: the resourceVersion is too
	// old, as after an API server restart); versions in between may be missing.
	gaps int
	// last is the last version seen of each call (for the approver and the progress line).
	last map[string]*toolgatev1alpha1.ToolCall
}

func newRecorder(prefix string) *recorder {
	return &recorder{
		prefix: prefix, jobs: map[types.UID]*check.JobRecord{}, pods: map[types.UID]*seenPod{},
		events: map[types.UID]*eventsv1.Event{}, approvals: map[string]*toolgatev1alpha1.ToolCallApproval{},
		last: map[string]*toolgatev1alpha1.ToolCall{},
	}
}

// start runs the informers until ctx ends; it returns once they have synced.
func (r *recorder) start(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	c, err := cache.New(cfg, cache.Options{
		Scheme:            toolgatetest.NewScheme(),
		DefaultNamespaces: map[string]cache.Config{demoNS: {}},
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{systemNS: {}}},
		},
		DefaultWatchErrorHandler: func(ctx context.Context, rf *toolscache.Reflector, err error) {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				r.mu.Lock()
				r.gaps++
				r.mu.Unlock()
			}
			toolscache.DefaultWatchErrorHandler(ctx, rf, err)
		},
	})
	if err != nil {
		return err
	}
	handlers := map[client.Object]func(kind string, obj any){
		&toolgatev1alpha1.ToolCall{}:         r.onCall,
		&batchv1.Job{}:                       r.onJob,
		&corev1.Pod{}:                        r.onPod,
		&eventsv1.Event{}:                    r.onEvent,
		&toolgatev1alpha1.ToolCallApproval{}: r.onApproval,
		&coordinationv1.Lease{}:              r.onLease,
	}
	for obj, fn := range handlers {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { fn("ADDED", obj) },
			UpdateFunc: func(_, obj any) { fn("MODIFIED", obj) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				fn("DELETED", obj)
			},
		}); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	return nil
}

func (r *recorder) ours(name string) bool { return strings.HasPrefix(name, r.prefix) }

func (r *recorder) onCall(kind string, obj any) {
	call, ok := obj.(*toolgatev1alpha1.ToolCall)
	if !ok || !r.ours(call.Name) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions = append(r.versions, check.CallVersion{Type: kind, Observed: time.Now(), Call: *call.DeepCopy()})
	if kind != "DELETED" {
		r.last[call.Name] = call.DeepCopy()
	}
}

// callAttempt reads a tool Job's or Pod's call and attempt from what the operator put on it.
func callAttempt(labels, annotations map[string]string) (string, int) {
	call := annotations[controllers.AnnotationCallName]
	if call == "" {
		call = labels[controllers.LabelCall]
	}
	n, _ := strconv.Atoi(labels[controllers.LabelAttempt])
	return call, n
}

func (r *recorder) onJob(_ string, obj any) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	call, attempt := callAttempt(job.Labels, job.Annotations)
	if !r.ours(call) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.jobs[job.UID]; seen {
		return
	}
	rec := &check.JobRecord{Namespace: job.Namespace, Name: job.Name, UID: job.UID, Call: call,
		Attempt: attempt, Created: job.CreationTimestamp.Time}
	if owner := metav1.GetControllerOf(job); owner != nil {
		rec.CallUID = owner.UID
	}
	r.jobs[job.UID] = rec
}

func (r *recorder) onPod(_ string, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	call, attempt := callAttempt(pod.Labels, pod.Annotations)
	if !r.ours(call) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pods[pod.UID]
	if p == nil {
		p = &seenPod{UID: pod.UID, Name: pod.Name, Job: pod.Labels["job-name"], Call: call, Attempt: attempt}
		if owner := metav1.GetControllerOf(pod); owner != nil {
			p.JobUID = owner.UID
		}
		r.pods[pod.UID] = p
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != controllers.ToolContainerName {
			continue
		}
		p.Restarts = max(p.Restarts, cs.RestartCount)
		var at time.Time
		switch {
		case cs.State.Running != nil:
			at = cs.State.Running.StartedAt.Time
		case cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero():
			at = cs.State.Terminated.StartedAt.Time
		default:
			continue
		}
		if !p.Started {
			p.Started, p.StartedAt = true, at
		}
	}
}

func (r *recorder) onEvent(_ string, obj any) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok || !r.ours(ev.Regarding.Name) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events[ev.UID] = ev.DeepCopy()
}

func (r *recorder) onApproval(kind string, obj any) {
	a, ok := obj.(*toolgatev1alpha1.ToolCallApproval)
	if !ok || !r.ours(a.Name) || kind == "DELETED" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.approvals[a.Name] = a.DeepCopy()
}

func (r *recorder) onLease(_ string, obj any) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Name != "toolgate.dev" {
		return
	}
	s := leaseSeen{At: time.Now()}
	if l.Spec.HolderIdentity != nil {
		s.Holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		s.Renew = l.Spec.RenewTime.Time
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.leases = append(r.leases, s)
}

// leaseHolder is the holder the recorder saw last.
func (r *recorder) leaseHolder() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.leases) == 0 {
		return ""
	}
	return r.leases[len(r.leases)-1].Holder
}

// takeoverAfter is when a holder other than old (and not empty) was first seen renewing the
// Lease after t; ok false if none yet. With old == "" any holder renewing after t counts
// (recovery after an API server restart, when the leader may keep its lease).
func (r *recorder) takeoverAfter(t time.Time, old string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.leases {
		if l.At.Before(t) || l.Holder == "" || (old != "" && l.Holder == old) {
			continue
		}
		// renewTime has microsecond precision: a renewal from before t is not a takeover.
		if l.Renew.Before(t.Add(-time.Second)) {
			continue
		}
		return l.At, true
	}
	return time.Time{}, false
}

// lastOf is the last version seen of a call (nil if none).
func (r *recorder) lastOf(name string) *toolgatev1alpha1.ToolCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[name]
}

// terminalCount is how many of the run's calls are terminal in their last version seen.
func (r *recorder) terminalCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.last {
		if c.Status.Phase.IsTerminal() {
			n++
		}
	}
	return n
}

// history is what the run left behind, for check.Check: the calls, Jobs, Pods and
// approvals as listed now (what the watch missed is added), the watch history, the Pod
// starts and the Events.
func (r *recorder) history(ctx context.Context, c client.Client) (check.History, error) {
	var calls toolgatev1alpha1.ToolCallList
	if err := c.List(ctx, &calls, client.InNamespace(demoNS)); err != nil {
		return check.History{}, err
	}
	var jobs batchv1.JobList
	managed := client.MatchingLabels{controllers.LabelManagedBy: controllers.ManagedByValue}
	if err := c.List(ctx, &jobs, client.InNamespace(demoNS), managed); err != nil {
		return check.History{}, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(demoNS), managed); err != nil {
		return check.History{}, err
	}
	var approvals toolgatev1alpha1.ToolCallApprovalList
	if err := c.List(ctx, &approvals, client.InNamespace(demoNS)); err != nil {
		return check.History{}, err
	}
	for i := range jobs.Items {
		r.onJob("LISTED", &jobs.Items[i])
	}
	for i := range pods.Items {
		r.onPod("LISTED", &pods.Items[i])
	}
	for i := range approvals.Items {
		r.onApproval("LISTED", &approvals.Items[i])
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	h := check.History{Versions: slices.Clone(r.versions), WatchGaps: r.gaps}
	for _, call := range calls.Items {
		if r.ours(call.Name) {
			h.Calls = append(h.Calls, call)
		}
	}
	callOfJob := map[types.UID]types.UID{}
	for _, j := range r.jobs {
		h.Jobs = append(h.Jobs, *j)
		callOfJob[j.UID] = j.CallUID
	}
	for _, p := range r.pods {
		if !p.Started {
			continue
		}
		// A container restart (restartPolicy Never: none) would be one more start.
		for i := int32(0); i <= p.Restarts; i++ {
			h.PodStarts = append(h.PodStarts, check.PodStart{Namespace: demoNS, Pod: p.Name, PodUID: p.UID,
				Job: p.Job, JobUID: p.JobUID, Call: p.Call, CallUID: callOfJob[p.JobUID], Attempt: p.Attempt, At: p.StartedAt})
		}
	}
	for _, e := range r.events {
		h.Events = append(h.Events, *e)
	}
	for _, a := range r.approvals {
		h.Approvals = append(h.Approvals, *a)
	}
	return h, nil
}

// podStats are figures the checker does not report: Pods seen, Pods whose tool container
// never started (a Pod killed at its deadline before its container ran, an image error).
func (r *recorder) podStats() (pods, neverStarted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.pods {
		pods++
		if !p.Started {
			neverStarted++
		}
	}
	return pods, neverStarted
}
