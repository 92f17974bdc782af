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
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/test/chaos/check"
)

// The real-cluster chaos run records what the cluster did on connections of its own (not
// the operator's). The shared check.Recorder watches ToolCalls (every version), tool Jobs
// and tool Pods, resuming from the last resourceVersion after the API server restarts
// (and re-listing, counted as a watch gap, when that version is too old). Pod starts come
// from an informer of our own instead of its "every Pod is a start": on a real cluster a
// Pod counts as a start only once its tool container was seen running or terminated with
// a startedAt (a Pod deleted at its deadline before its container ran did not run the
// body). An informer on the operator's leader-election Lease gives the takeover times.
// Tool Jobs and Pods live for --job-retention (5 min on the local cluster) after their
// attempt ended, longer than any call of the run takes, and the final listing adds
// whatever a watch missed.

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
	At      time.Time
	Holder  string
	Renew   time.Time
	Acquire time.Time
}

type recorder struct {
	prefix string // every call of the run has this name prefix
	shared *check.Recorder

	mu     sync.Mutex
	pods   map[types.UID]*seenPod
	leases []leaseSeen
	// last is the last version seen of each call (for the approver and progress lines).
	last map[string]*toolgatev1alpha1.ToolCall
	// modified are the times the run's calls were seen changed (MODIFIED), in order.
	modified []time.Time
}

func newRecorder(prefix string) *recorder {
	return &recorder{prefix: prefix, pods: map[types.UID]*seenPod{}, last: map[string]*toolgatev1alpha1.ToolCall{}}
}

// start starts the shared Recorder and the Pod and Lease informers until ctx ends; it
// returns once they have listed.
func (r *recorder) start(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	shared, err := check.NewRecorder(cfg, demoNS)
	if err != nil {
		return err
	}
	shared.OnCall = r.onCall
	r.shared = shared
	if err := shared.Start(ctx); err != nil {
		return err
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            check.Scheme(),
		DefaultNamespaces: map[string]cache.Config{demoNS: {}},
		ByObject: map[client.Object]cache.ByObject{
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{systemNS: {}}},
		},
	})
	if err != nil {
		return err
	}
	for obj, fn := range map[client.Object]func(obj any){&corev1.Pod{}: r.onPod, &coordinationv1.Lease{}: r.onLease} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: fn, UpdateFunc: func(_, obj any) { fn(obj) },
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

func (r *recorder) onCall(v check.CallVersion) {
	if !r.ours(v.Call.Name) || v.Type == "DELETED" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[v.Call.Name] = v.Call.DeepCopy()
	if v.Type == "MODIFIED" {
		r.modified = append(r.modified, v.Observed)
	}
}

func (r *recorder) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	call := pod.Annotations[podcontract.AnnotationCallName]
	if !r.ours(call) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pods[pod.UID]
	if p == nil {
		p = &seenPod{UID: pod.UID, Name: pod.Name, Call: call}
		p.Attempt, _ = strconv.Atoi(pod.Labels[podcontract.LabelAttempt])
		if owner := metav1.GetControllerOf(pod); owner != nil {
			p.Job, p.JobUID = owner.Name, owner.UID
		}
		r.pods[pod.UID] = p
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != podcontract.ToolContainerName {
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

func (r *recorder) onLease(obj any) {
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
	if l.Spec.AcquireTime != nil {
		s.Acquire = l.Spec.AcquireTime.Time
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

// takeoverAfter is the first Lease version seen after t in which a holder other than old
// (and not empty) renews it; ok false if none yet. With old == "" any holder renewing
// after t counts (recovery after an API server restart, when the leader may keep its lease).
func (r *recorder) takeoverAfter(t time.Time, old string) (leaseSeen, bool) {
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
		return l, true
	}
	return leaseSeen{}, false
}

// progressAfter is when the first of the run's calls was seen changed (a MODIFIED
// version: only the operator writes a call after its creation) after t.
func (r *recorder) progressAfter(t time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range r.modified {
		if at.After(t) {
			return at, true
		}
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

// history is what the run left behind, for check.Check: the shared Recorder's history
// (the calls, approvals and Events as listed now, the ToolCall versions and Jobs watched)
// kept to the run's calls, with the Pod starts seen by our informer and a final Pod list.
func (r *recorder) history(ctx context.Context, c client.Client) (check.History, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(demoNS),
		client.MatchingLabels{podcontract.LabelManagedBy: podcontract.ManagedByValue}); err != nil {
		return check.History{}, err
	}
	for i := range pods.Items {
		r.onPod(&pods.Items[i])
	}
	all, err := r.shared.History(ctx)
	if err != nil {
		return check.History{}, err
	}
	h := check.History{WatchGaps: all.WatchGaps}
	for _, call := range all.Calls {
		if r.ours(call.Name) {
			h.Calls = append(h.Calls, call)
		}
	}
	for _, v := range all.Versions {
		if r.ours(v.Call.Name) {
			h.Versions = append(h.Versions, v)
		}
	}
	callOfJob := map[types.UID]types.UID{}
	for _, j := range all.Jobs {
		if r.ours(j.Call) {
			h.Jobs = append(h.Jobs, j)
			callOfJob[j.UID] = j.CallUID
		}
	}
	for _, a := range all.Approvals {
		if r.ours(a.Name) {
			h.Approvals = append(h.Approvals, a)
		}
	}
	for _, e := range all.Events {
		if r.ours(e.Regarding.Name) {
			h.Events = append(h.Events, e)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.pods {
		if !p.Started {
			continue
		}
		// A container restart (restartPolicy Never: none) would be one more start.
		for range p.Restarts + 1 {
			h.PodStarts = append(h.PodStarts, check.PodStart{Namespace: demoNS, Pod: p.Name, PodUID: p.UID,
				Job: p.Job, JobUID: p.JobUID, Call: p.Call, CallUID: callOfJob[p.JobUID], Attempt: p.Attempt, At: p.StartedAt})
		}
	}
	return h, nil
}

// watchErrors are the shared Recorder's watch errors (other than the API server away).
func (r *recorder) watchErrors() []error { return r.shared.Errors() }

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
