package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// callTimes is what the harness saw of one call, in its own clock.
type callTimes struct {
	created     time.Time // just before Create
	createErr   error
	jobAdded    time.Time // first ADDED event of a Job of the call
	jobs        map[string]bool
	podDone     time.Time // first Pod event with the tool container terminated
	jobComplete time.Time // first Job event with Complete=True
	frozen      time.Time // first ToolCall event with a terminal phase
	phase       v1alpha1.ToolCallPhase
	reason      string
	message     string
}

// Recorder timestamps the watch events of the benchmark's namespace, per call.
type Recorder struct {
	mu       sync.Mutex
	calls    map[string]*callTimes
	want     int
	terminal int
	allDone  chan struct{}
	errs     []error
}

// NewRecorder expects want calls to end.
func NewRecorder(want int) *Recorder {
	return &Recorder{calls: map[string]*callTimes{}, want: want, allDone: make(chan struct{})}
}

// Done is closed when every expected call was seen terminal (or failed to be created).
func (r *Recorder) Done() <-chan struct{} { return r.allDone }

func (r *Recorder) call(name string) *callTimes {
	c, ok := r.calls[name]
	if !ok {
		c = &callTimes{jobs: map[string]bool{}}
		r.calls[name] = c
	}
	return c
}

// Created records the client-side creation time (or error) of a call.
func (r *Recorder) Created(name string, at time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.call(name)
	c.created, c.createErr = at, err
	if err != nil {
		r.markTerminal()
	}
}

func (r *Recorder) markTerminal() {
	r.terminal++
	if r.terminal == r.want {
		close(r.allDone)
	}
}

// Start opens the watches (ToolCalls, toolgate's Jobs and Pods) in ns; it returns once all
// three are established, and keeps them open (resuming on a closed stream) until ctx ends.
func (r *Recorder) Start(ctx context.Context, c client.WithWatch, ns string) error {
	managed := client.MatchingLabels{podcontract.LabelManagedBy: podcontract.ManagedByValue}
	specs := []struct {
		list   client.ObjectList
		opts   []client.ListOption
		handle func(watch.Event, time.Time)
	}{
		{&v1alpha1.ToolCallList{}, []client.ListOption{client.InNamespace(ns)}, r.onCall},
		{&batchv1.JobList{}, []client.ListOption{client.InNamespace(ns), managed}, r.onJob},
		{&corev1.PodList{}, []client.ListOption{client.InNamespace(ns), managed}, r.onPod},
	}
	for _, s := range specs {
		w, err := c.Watch(ctx, s.list, s.opts...)
		if err != nil {
			return fmt.Errorf("watching %T: %w", s.list, err)
		}
		go r.follow(ctx, c, w, s.list, s.opts, s.handle)
	}
	return nil
}

// follow hands each event to handle with its arrival time and re-opens a closed watch from
// the last resourceVersion seen.
func (r *Recorder) follow(ctx context.Context, c client.WithWatch, w watch.Interface, list client.ObjectList,
	opts []client.ListOption, handle func(watch.Event, time.Time)) {
	rv := ""
	for {
		for ev := range w.ResultChan() {
			now := time.Now()
			if ev.Type == watch.Error {
				r.fail(fmt.Errorf("watch %T: %v", list, ev.Object))
				continue
			}
			if obj, ok := ev.Object.(client.Object); ok {
				rv = obj.GetResourceVersion()
			}
			handle(ev, now)
		}
		if ctx.Err() != nil {
			return
		}
		var err error
		raw := &metav1.ListOptions{ResourceVersion: rv}
		w, err = c.Watch(ctx, list, append(opts, &client.ListOptions{Raw: raw})...)
		if err != nil {
			r.fail(fmt.Errorf("re-opening the watch of %T: %w", list, err))
			time.Sleep(time.Second)
			w = watch.NewEmptyWatch()
		}
	}
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *Recorder) onCall(ev watch.Event, at time.Time) {
	tc, ok := ev.Object.(*v1alpha1.ToolCall)
	if !ok || !tc.Status.Phase.IsTerminal() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.call(tc.Name)
	if !c.frozen.IsZero() {
		return
	}
	c.frozen, c.phase = at, tc.Status.Phase
	if res := tc.Status.Result; res != nil {
		c.reason, c.message = res.Reason, res.Error
	}
	r.markTerminal()
}

func (r *Recorder) onJob(ev watch.Event, at time.Time) {
	job, ok := ev.Object.(*batchv1.Job)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.call(job.Annotations[podcontract.AnnotationCallName])
	c.jobs[job.Name] = true
	if c.jobAdded.IsZero() && ev.Type == watch.Added {
		c.jobAdded = at
	}
	for _, cond := range job.Status.Conditions {
		if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue && c.jobComplete.IsZero() {
			c.jobComplete = at
		}
	}
}

func (r *Recorder) onPod(ev watch.Event, at time.Time) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != podcontract.ToolContainerName || cs.State.Terminated == nil {
			continue
		}
		r.mu.Lock()
		c := r.call(pod.Annotations[podcontract.AnnotationCallName])
		if c.podDone.IsZero() {
			c.podDone = at
		}
		r.mu.Unlock()
	}
}

// Calls returns a copy of what was recorded, and the watch errors.
func (r *Recorder) Calls() (map[string]callTimes, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]callTimes, len(r.calls))
	for k, v := range r.calls {
		out[k] = *v
	}
	return out, append([]error(nil), r.errs...)
}
