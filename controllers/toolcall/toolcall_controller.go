package toolcall

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/executor/sessionexec"
	"github.com/toolgate/toolgate/controllers/executor/warmexec"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/controllers/frozenargs"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/internal/notify"
	"github.com/toolgate/toolgate/pipeline"
)

// Reconciler walks a ToolCall through the pipeline: the pure stages in one pass and
// one status write, then the Job, then the outcome and one final status write.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache where a stale read would be wrong (a Job just created).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	Compiler  *pipeline.Compiler
	Logs      LogReader
	Options   options.Call
	// Audit receives the audit records; zero: the "audit" child of the process logger.
	Audit logr.Logger
	// Notifier sends approval CloudEvents to the sinks of parked calls; nil: none.
	Notifier *notify.Notifier
	// Warm hands warm pool Pods their arguments (controllers/executor/warmexec); nil: every call runs cold.
	Warm warmexec.WarmExecutor
	// Tracer exports a trace of each call (tracer.go); nil: no tracing.
	Tracer CallTracer
	// Session carries session calls to their session Pods (controllers/executor/sessionexec);
	// nil: direct mutual TLS to the Pods (sessionexec.TLSTransport).
	Session sessionexec.Transport

	// the collaborators (toolcall_collaborators.go), wired once by wire
	wireOnce  sync.Once
	audit     auditWriter
	notices   approvalNotifier
	retention retention
	status    statusWriter
	admission admitter
	stopper   podStopper
	review    resultReview
	// frozen carries the arguments admission froze to every later use (controllers/frozenargs).
	frozen frozenargs.Store
	// decided keeps the outcomes whose recording waits for their Pods (toolcall_stopping.go).
	decided decidedEnds
	// issued keeps session calls' first-seen resourceVersions until admission records them (session_order.go).
	issued issuedRevisions
	// isolation checks tool Pods' network isolation (toolcall_isolation.go), built once.
	isolationOnce sync.Once
	isolation     *netisolation.Enforcer
	// featureList is every feature (controllers/feature/all), built once from the fields above.
	featureOnce sync.Once
	featureList feature.List
	// execs are the stage-5 backends (execute.go), built once from the fields above.
	execOnce sync.Once
	execs    []executor.Executor
	// Keys are the namespaces' frame masters (controllers/framekeys), shared with the pool reconciler
	// by Setup; made with the executors otherwise.
	Keys *framekeys.Store
}

// +kubebuilder:rbac:groups=toolgate.dev,resources=toolcalls,verbs=get;list;watch;delete;patch
// +kubebuilder:rbac:groups=toolgate.dev,resources=toolcalls/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=toolgate.dev,resources=toolcallapprovals,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=toolgate.dev,resources=toolcallapprovals/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=toolgate.dev,resources=tools;clustertools;toolscopes;toolpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete;patch;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile is the thin entry: get, ignore not-found, hand over to the phase's step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.wire()
	call := &v1alpha1.ToolCall{}
	if err := r.Get(ctx, req.NamespacedName, call); err != nil {
		if apierrors.IsNotFound(err) {
			r.audit.pending.forget(req.NamespacedName)
			r.notices.forgetNotified(req.NamespacedName)
			r.frozen.Forget(req.NamespacedName)
			r.admission.held.forget(req.NamespacedName)
			r.decided.forget(req.NamespacedName)
			r.issued.forget(req.NamespacedName)
			_, err := r.tidyExecutions(ctx, req.NamespacedName, nil)
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, err
	}
	if r.status.written.stale(call) {
		// The cache is behind this reconciler's own last write: that write's event follows.
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("toolCall", klog.KObj(call)))
	retained, err := r.tidyExecutions(ctx, req.NamespacedName, call)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !call.DeletionTimestamp.IsZero() {
		return r.retention.finishDeleted(ctx, call, retained) // toolcall_record_finalizer.go
	}
	if call.Status.Phase.IsTerminal() {
		// The cached terminal call is trimmed (cache_transforms.go): it is only read here, never written.
		r.audit.auditRecovered(ctx, call)
		return r.retention.expire(ctx, call, retained)
	}
	r.issued.see(call) // before this pass's first write moves the resourceVersion
	if err := r.retention.ensureRecordFinalizer(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.reconcile(beginTrace(ctx, r.Tracer, call), call)
	if retained > 0 && (res.RequeueAfter <= 0 || retained < res.RequeueAfter) {
		res.RequeueAfter = retained
	}
	// A write conflict (another pass wrote first, or the cache was behind) is returned like
	// any error: the controller requeues the call through its rate limiter (per-item
	// exponential backoff), so a hot call cannot spin, and the retry starts from fresh state.
	return res, err
}

// reconcile runs the step for the call's phase; each step ends with at most one status write.
func (r *Reconciler) reconcile(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	if cancelRequested(call) {
		return r.cancel(ctx, call) // toolcall_cancel.go
	}
	switch call.Status.Phase {
	case "", v1alpha1.PhasePending:
		return r.admission.admit(ctx, call)
	case v1alpha1.PhaseAwaitingApproval:
		return r.admission.awaitApproval(ctx, call)
	case v1alpha1.PhaseQueued:
		return r.startWhenRunnable(ctx, call)
	case v1alpha1.PhaseRunning:
		return r.observe(ctx, call)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager wires the watches: the call, its Jobs and Pods, its approval, the
// other calls of its session (a call ending may let a queued one start), and after a
// restart the live calls ahead of the terminal ones (liveCallsFirst).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.wire()
	if err := setupIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ToolCall{}).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToCalls(r.executors())),
			builder.WithPredicates(predicate.NewPredicateFuncs(isToolgateObject))).
		Watches(&v1alpha1.ToolCallApproval{}, handler.EnqueueRequestsFromMapFunc(approvalToCall)).
		Watches(&v1alpha1.ToolCall{}, handler.EnqueueRequestsFromMapFunc(r.sessionPeers)).
		Watches(&v1alpha1.ToolCall{}, liveCallsFirst{})
	for _, e := range r.executors() {
		if w, ok := e.(executor.WakeSource); ok {
			b = b.WatchesRawSource(source.Channel(w.Wakeups(), &handler.EnqueueRequestForObject{}))
		}
		if rp, ok := e.(interface{ Reaper() manager.Runnable }); ok {
			if err := mgr.Add(rp.Reaper()); err != nil {
				return err
			}
		}
	}
	return b.Named("toolcall").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.Workers, 1)}).
		Complete(r)
}
