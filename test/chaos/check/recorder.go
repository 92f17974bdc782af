package check

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Recorder keeps the watch history a Check needs, against any cluster: every ToolCall
// version, every tool Job and every tool Pod (as PodStarts). Its watches resume from the
// last resourceVersion after any error (an API server restart included) and re-list when
// that version is too old (counted in WatchGaps).
type Recorder struct {
	// OnCall, when set before Start, is called with every ToolCall version as it is
	// recorded (from the watch goroutine: it must not block for long).
	OnCall func(CallVersion)

	c         client.WithWatch
	namespace string

	mu       sync.Mutex
	versions []CallVersion
	jobs     map[types.UID]JobRecord
	pods     map[types.UID]PodStart
	gaps     int
	errs     []error
}

// Retry is how long a watch waits before it tries again after an error.
const Retry = 200 * time.Millisecond

// NewRecorder returns a Recorder for the cluster of cfg, watching one namespace (all when
// empty). Call Start.
func NewRecorder(cfg *rest.Config, namespace string) (*Recorder, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, err
	}
	return &Recorder{c: c, namespace: namespace, jobs: map[types.UID]JobRecord{}, pods: map[types.UID]PodStart{}}, nil
}

// Scheme holds the kinds the Recorder reads: client-go's and toolgate.dev/v1alpha1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// Start lists and starts watching ToolCalls, tool Jobs and tool Pods; it returns once
// the three first lists are recorded, and keeps the watches until ctx ends.
func (r *Recorder) Start(ctx context.Context) error {
	managed := client.MatchingLabels{podcontract.LabelManagedBy: podcontract.ManagedByValue}
	specs := []struct {
		list   client.ObjectList
		opts   []client.ListOption
		handle func(string, runtime.Object, time.Time)
	}{
		{&v1alpha1.ToolCallList{}, nil, r.onCall},
		{&batchv1.JobList{}, []client.ListOption{managed}, r.onJob},
		{&corev1.PodList{}, []client.ListOption{managed}, r.onPod},
	}
	for _, s := range specs {
		opts := s.opts
		if r.namespace != "" {
			opts = append(opts, client.InNamespace(r.namespace))
		}
		rv, err := r.list(ctx, s.list, opts, s.handle)
		if err != nil {
			return fmt.Errorf("listing %T: %w", s.list, err)
		}
		go r.follow(ctx, s.list, opts, rv, s.handle)
	}
	return nil
}

// list records every item of a fresh list as ADDED and returns the list's resourceVersion.
func (r *Recorder) list(ctx context.Context, list client.ObjectList, opts []client.ListOption, handle func(string, runtime.Object, time.Time)) (string, error) {
	if err := r.c.List(ctx, list, opts...); err != nil {
		return "", err
	}
	now := time.Now()
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", err
	}
	for _, item := range items {
		handle(string(watch.Added), item, now)
	}
	return list.GetResourceVersion(), nil
}

// follow watches from rv until ctx ends: a closed or failed watch is re-opened from the
// last resourceVersion seen, and a version too old for the API server is replaced by a
// fresh list (a gap).
func (r *Recorder) follow(ctx context.Context, list client.ObjectList, opts []client.ListOption, rv string, handle func(string, runtime.Object, time.Time)) {
	for ctx.Err() == nil {
		raw := &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}
		w, err := r.c.Watch(ctx, list, append(append([]client.ListOption(nil), opts...), &client.ListOptions{Raw: raw})...)
		if err != nil {
			if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
				rv = r.relist(ctx, list, opts, rv, handle)
				continue
			}
			r.sleep(ctx)
			continue
		}
		gone := false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				status := apierrors.FromObject(ev.Object)
				if apierrors.IsGone(status) || apierrors.IsResourceExpired(status) {
					gone = true
				} else if ctx.Err() == nil {
					r.fail(fmt.Errorf("watch of %T: %w", list, status))
				}
				break
			}
			obj, ok := ev.Object.(client.Object)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				handle(string(ev.Type), ev.Object, time.Now())
			}
		}
		w.Stop()
		if gone {
			rv = r.relist(ctx, list, opts, rv, handle)
		}
	}
}

// relist lists again after a gap; until it succeeds it keeps the old version.
func (r *Recorder) relist(ctx context.Context, list client.ObjectList, opts []client.ListOption, rv string, handle func(string, runtime.Object, time.Time)) string {
	fresh, err := r.list(ctx, list, opts, handle)
	if err != nil {
		r.sleep(ctx)
		return rv
	}
	r.mu.Lock()
	switch list.(type) {
	case *v1alpha1.ToolCallList:
		r.gaps++
	case *batchv1.JobList:
		// A Job resumed in the gap may be missing its resume: its versions no longer order
		// it against its Pod (JobRecord.Relisted).
		for uid, j := range r.jobs {
			j.Relisted = true
			r.jobs[uid] = j
		}
	}
	r.mu.Unlock()
	return fresh
}

func (r *Recorder) sleep(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(Retry):
	}
}

func (r *Recorder) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 100 {
		r.errs = append(r.errs, err)
	}
}

func (r *Recorder) onCall(typ string, obj runtime.Object, at time.Time) {
	call, ok := obj.(*v1alpha1.ToolCall)
	if !ok {
		return
	}
	v := CallVersion{Type: typ, Observed: at, Call: *call.DeepCopy()}
	r.mu.Lock()
	r.versions = append(r.versions, v)
	r.mu.Unlock()
	if r.OnCall != nil {
		r.OnCall(v)
	}
}

func (r *Recorder) onJob(typ string, obj runtime.Object, at time.Time) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, seen := r.jobs[job.UID]
	if !seen {
		rec = JobRecordOf(job)
	}
	suspended := ptr.Deref(job.Spec.Suspend, false)
	if n := len(rec.Versions); n == 0 || rec.Versions[n-1].Suspended != suspended {
		rec.Versions = append(rec.Versions, JobVersion{ResourceVersion: job.ResourceVersion, Suspended: suspended, Observed: at})
	}
	rec.Deleted = rec.Deleted || typ == string(watch.Deleted) || !job.DeletionTimestamp.IsZero()
	r.jobs[job.UID] = rec
}

func (r *Recorder) onPod(_ string, obj runtime.Object, _ time.Time) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.pods[pod.UID]; !seen {
		r.pods[pod.UID] = PodStartOf(pod)
	}
}

// JobRecordOf describes a tool Job.
func JobRecordOf(job *batchv1.Job) JobRecord {
	rec := JobRecord{Namespace: job.Namespace, Name: job.Name, UID: job.UID, Call: job.Annotations[podcontract.AnnotationCallName],
		Created: job.CreationTimestamp.Time}
	rec.Attempt, _ = strconv.Atoi(job.Labels[podcontract.LabelAttempt])
	rec.Queue = job.Labels[podspec.LabelKueueQueue]
	if owner := metav1.GetControllerOf(job); owner != nil {
		rec.CallUID = owner.UID
	}
	return rec
}

// PodStartOf describes a tool Pod as a start of its attempt. The call's uid is not on the
// Pod; Check matches by the call's name when CallUID is empty, and History fills it from
// the Pod's Job when that Job was seen.
func PodStartOf(pod *corev1.Pod) PodStart {
	p := PodStart{Namespace: pod.Namespace, Pod: pod.Name, PodUID: pod.UID, Call: pod.Annotations[podcontract.AnnotationCallName],
		At: pod.CreationTimestamp.Time, ResourceVersion: pod.ResourceVersion}
	p.Attempt, _ = strconv.Atoi(pod.Labels[podcontract.LabelAttempt])
	if owner := metav1.GetControllerOf(pod); owner != nil {
		p.Job, p.JobUID = owner.Name, owner.UID
	}
	return p
}

// Errors returns the watch errors seen (other than a closed stream or an API server away).
func (r *Recorder) Errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// Versions returns the ToolCall watch history so far.
func (r *Recorder) Versions() []CallVersion {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]CallVersion(nil), r.versions...)
}

// History lists the ToolCalls, ToolCallApprovals and Events (of the Recorder's namespace)
// as they are now and returns them with the recorded versions, Jobs and Pod starts. The
// caller adds Expectations, LastFault and TerminalBound (and may replace PodStarts with a
// kubelet's own record).
func (r *Recorder) History(ctx context.Context) (History, error) {
	var opts []client.ListOption
	if r.namespace != "" {
		opts = append(opts, client.InNamespace(r.namespace))
	}
	calls, approvals, events := &v1alpha1.ToolCallList{}, &v1alpha1.ToolCallApprovalList{}, &eventsv1.EventList{}
	var errs []error
	for _, l := range []client.ObjectList{calls, approvals, events} {
		if err := r.c.List(ctx, l, opts...); err != nil {
			errs = append(errs, fmt.Errorf("listing %T: %w", l, err))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := History{Calls: calls.Items, Approvals: approvals.Items, Events: events.Items,
		Versions: append([]CallVersion(nil), r.versions...), WatchGaps: r.gaps}
	jobUIDs := map[types.UID]types.UID{}
	for _, j := range r.jobs {
		h.Jobs = append(h.Jobs, j)
		jobUIDs[j.UID] = j.CallUID
	}
	for _, p := range r.pods {
		if p.CallUID == "" {
			p.CallUID = jobUIDs[p.JobUID]
		}
		h.PodStarts = append(h.PodStarts, p)
	}
	h.Pods = append([]PodStart(nil), h.PodStarts...)
	return h, errors.Join(errs...)
}
