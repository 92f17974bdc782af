package controllers

import (
	"github.com/go-logr/logr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor/sessionexec"
	"github.com/toolgate/toolgate/controllers/executor/warmexec"
	"github.com/toolgate/toolgate/controllers/framekeys"
	"github.com/toolgate/toolgate/controllers/history"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/controllers/registration"
	"github.com/toolgate/toolgate/controllers/toolcall"
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

// SessionTransport carries one session call to its session Pod (sessionexec.Transport).
type SessionTransport = sessionexec.Transport

// SessionReply is what a SessionTransport saw of one call (sessionexec.Reply).
type SessionReply = sessionexec.Reply

// PodAttach is the WarmExecutor of a real cluster: pods/attach (warmexec.PodAttach).
type PodAttach = warmexec.PodAttach

// CallOptions are the operator-wide settings of the ToolCall pipeline (controllers/options).
type CallOptions = options.Call

// DefaultCallOptions are the settings used when the manager is given none.
func DefaultCallOptions() CallOptions { return options.DefaultCall() }

// RetentionOptions say how long finished calls are kept and what their audit record holds.
type RetentionOptions = options.Retention

// DefaultRetentionOptions keep a finished call for 24 hours, at least 5 minutes and at
// most 7 days whatever the call or its tool asks, with no history limit.
func DefaultRetentionOptions() RetentionOptions { return options.DefaultRetention() }

// DefaultMinTTL and DefaultMaxTTL are the default floor and ceiling of a call's TTL.
const (
	DefaultMinTTL = options.DefaultMinTTL
	DefaultMaxTTL = options.DefaultMaxTTL
)

// LogReader reads the end of a container's log (toolcall.LogReader).
type LogReader = toolcall.LogReader

// CallTracer exports a trace of every ToolCall (toolcall.CallTracer).
type CallTracer = toolcall.CallTracer

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
	// Session carries session calls to their session Pods; nil: direct mutual TLS.
	Session SessionTransport
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
			&v1alpha1.ToolCall{}:            {Transform: toolcall.TransformToolCall},
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
			logs = toolcall.PodLogReader{Clientset: cs}
		}
		if warm == nil {
			warm = PodAttach{Config: mgr.GetConfig(), Clientset: cs}
		}
	}
	compiler := pipeline.DefaultCompiler()
	rec := mgr.GetEventRecorder("toolgate")
	if opts.RegisterMetrics {
		metrics.Register(toolcall.PhaseCounter(mgr.GetClient()))
	}
	// Sink Secrets are read with the API reader: one GET of the named Secret, no informer.
	notifier := notify.New(opts.Notify, mgr.GetClient(), mgr.GetAPIReader(), rec)
	if err := mgr.Add(notifier); err != nil {
		return err
	}
	// The frame key Secrets are read with the API reader too: one GET per namespace, no informer.
	keys := framekeys.New(mgr.GetClient(), mgr.GetAPIReader(), opts.Clock)
	setups := []interface{ SetupWithManager(ctrl.Manager) error }{
		&toolcall.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(),
			Recorder: rec, Clock: opts.Clock, Compiler: compiler, Logs: logs, Options: opts.Call, Audit: opts.AuditLogger,
			Notifier: notifier, Warm: warm, Tracer: opts.Tracer, Keys: keys, Session: opts.Session},
		&warmpool.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Clock: opts.Clock, Job: opts.Call.Job, Recorder: rec, Keys: keys,
			Sessions: poolTLS()},
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

// poolTLS is the session CA the warm pools' session Pods get their TLS from (nil when it
// could not be made: the session executor is then off too, and pools keep warm Pods only).
func poolTLS() warmpool.SessionTLS {
	p, err := sessionexec.PoolTLS()
	if err != nil {
		return nil
	}
	return p
}

// TraceTo is the CallTracer exporting to exp (toolcall.TraceTo).
func TraceTo(exp sdktrace.SpanExporter) CallTracer { return toolcall.TraceTo(exp) }
