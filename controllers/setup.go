package controllers

import (
	"context"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor/warmexec"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/controllers/history"
	"github.com/toolgate/toolgate/controllers/registration"
	"github.com/toolgate/toolgate/controllers/warmpool"
	"github.com/toolgate/toolgate/controllers/workspace"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/notify"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/notifyconfig"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// WarmExecutor hands a claimed warm Pod's runner its Handover line (warmexec.WarmExecutor).
type WarmExecutor = warmexec.WarmExecutor

// WarmStream is what a WarmExecutor saw of one warm attempt (warmexec.WarmStream).
type WarmStream = warmexec.WarmStream

// PodAttach is the WarmExecutor of a real cluster: pods/attach (warmexec.PodAttach).
type PodAttach = warmexec.PodAttach

// Options configure the reconcilers as a whole.
type Options struct {
	Call CallOptions
	// Clock is injected so tests can move time (approval windows, deadlines).
	Clock clock.PassiveClock
	// Logs reads results carried in Pod logs; nil uses the pods/log subresource.
	Logs LogReader
	// AuditLogger receives the ToolCall audit records; zero: ctrl.Log.WithName("audit").
	AuditLogger logr.Logger
	// RegisterMetrics adds toolgate's metrics to controller-runtime's registry (once per process).
	RegisterMetrics bool
	// Notify configures the approval notifications (pkg/notifyconfig); zero: its defaults,
	// no default sink (ToolScopes' approvalSinks still apply).
	Notify notifyconfig.Options
	// Warm hands warm pool Pods their arguments; nil uses pods/attach (PodAttach).
	Warm WarmExecutor
	// Tracer exports a trace of every ToolCall (TraceTo); nil: no tracing.
	Tracer CallTracer
}

// CacheOptions restricts the manager's Pod and Job informers to toolgate's own objects, so
// the operator never caches a cluster's every Pod; strips managedFields from every cached
// object; and trims ToolCalls, Jobs and Pods to what the reconcilers read
// (TransformToolCall, TransformJob, TransformPod).
func CacheOptions() cache.Options {
	selector := labels.SelectorFromSet(labels.Set{podcontract.LabelManagedBy: podcontract.ManagedByValue})
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:  {Label: selector},
			&batchv1.Job{}: {Label: selector},
			// session workspace claims (controllers/workspace): toolgate's own only
			&corev1.PersistentVolumeClaim{}: {Label: selector},
			&v1alpha1.ToolCall{}:            {Transform: TransformToolCall},
		}}
}

// Setup adds every toolgate reconciler to the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Call.Job.RunnerImage == "" {
		opts.Call = DefaultCallOptions()
	}
	logs, warm := opts.Logs, opts.Warm
	if logs == nil || warm == nil {
		cs, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		if logs == nil {
			logs = PodLogReader{Clientset: cs}
		}
		if warm == nil {
			warm = PodAttach{Config: mgr.GetConfig(), Clientset: cs}
		}
	}
	compiler := pipeline.DefaultCompiler()
	rec := mgr.GetEventRecorder("toolgate")
	if opts.RegisterMetrics {
		metrics.Register(phaseCounter(mgr.GetClient()))
	}
	// Sink Secrets are read with the API reader: one GET of the named Secret, no informer.
	notifier := notify.New(opts.Notify, mgr.GetClient(), mgr.GetAPIReader(), rec)
	if err := mgr.Add(notifier); err != nil {
		return err
	}
	// The frame key Secrets are read with the API reader too: one GET per namespace, no informer.
	keys := framekeys.New(mgr.GetClient(), mgr.GetAPIReader(), opts.Clock)
	setups := []interface{ SetupWithManager(ctrl.Manager) error }{
		&ToolCallReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
			Recorder: rec, Clock: opts.Clock, Compiler: compiler, Logs: logs, Options: opts.Call, Audit: opts.AuditLogger,
			Notifier: notifier, Warm: warm, Tracer: opts.Tracer, keys: keys},
		&warmpool.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Clock: opts.Clock, Job: opts.Call.Job, Recorder: rec, Keys: keys},
		&history.Reconciler{Client: mgr.GetClient(), Succeeded: opts.Call.Retention.HistorySucceeded, Failed: opts.Call.Retention.HistoryFailed},
		&registration.ToolReconciler{Client: mgr.GetClient(), Recorder: rec, Compiler: compiler},
		&registration.ClusterToolReconciler{Client: mgr.GetClient(), Recorder: rec, Compiler: compiler},
		&registration.ToolScopeReconciler{Client: mgr.GetClient(), Recorder: rec},
		&registration.ToolPolicyReconciler{Client: mgr.GetClient(), Recorder: rec, Compiler: compiler},
		// after the ToolCallReconciler: it uses the session index that one sets up
		&workspace.Reconciler{Client: mgr.GetClient(), Clock: opts.Clock},
	}
	for _, s := range setups {
		if err := s.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// phaseCounter counts non-terminal calls by phase from the cache, for the active gauge.
// It reads only the active calls (the indexActivePhase index: finished calls, however
// many, cost a scrape nothing), without deep copies, and only reads them.
func phaseCounter(c client.Reader) metrics.PhaseCounter {
	return func(ctx context.Context) (map[string]int, error) {
		counts := map[string]int{}
		for _, phase := range []v1alpha1.ToolCallPhase{v1alpha1.PhaseRunning, v1alpha1.PhaseAwaitingApproval, v1alpha1.PhaseQueued} {
			calls := &v1alpha1.ToolCallList{}
			if err := c.List(ctx, calls, client.MatchingFields{indexActivePhase: string(phase)}, client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			counts[string(phase)] = len(calls.Items)
		}
		return counts, nil
	}
}
