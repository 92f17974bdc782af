package toolgatetest

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/notifyconfig"
)

// ManagerOptions configure StartManager. The zero value runs toolgate's reconcilers with
// the real clock and a fresh simulated Kubelet.
type ManagerOptions struct {
	// Clock is given to the reconcilers (use k8s.io/utils/clock/testing.FakePassiveClock to
	// move approval windows and deadlines). It stamps what they write; the API server stamps
	// creationTimestamp with the real time. A fake clock that stands still falls behind it as
	// the spec runs: audit records then show createdAt after admittedAt and negative
	// durations, and approval windows shrink by the lag (docs/testkit.md, "Two clocks").
	Clock clock.PassiveClock
	// Call changes the operator's ToolCall settings; zero: as cmd/manager ships them.
	Call CallOptions
	// Kubelet is reused across restarts (its scripts survive); nil creates one.
	Kubelet *Kubelet
	// NoKubelet runs no simulated Kubelet (Jobs then never run).
	NoKubelet bool
	// CollectGarbage runs a simulated garbage collector (envtest has none): once a ToolCall
	// is deleted, the Jobs and ToolCallApprovals whose ownerReferences name it are deleted,
	// and then the Pods of those Jobs; once a Tool or ClusterTool is deleted, its warm pool
	// Pods (a ClusterTool's in every namespace) — background propagation, by ownerReference
	// alone.
	CollectGarbage bool
	// AuditLogger receives the operator's audit records; zero: ctrl.Log's "audit" logger.
	AuditLogger logr.Logger
	// TraceExporter, when set, receives the operator's spans of every call (OpenTelemetry;
	// for example tracetest.NewInMemoryExporter()), exported synchronously.
	TraceExporter sdktrace.SpanExporter
	// KubeletRunsApart says that Kubelet already runs in a manager of its own
	// (Env.StartKubelet): this manager only reads its logs, and the Kubelet keeps running
	// while this manager is stopped (an operator outage).
	KubeletRunsApart bool
	// Notify configures the approval notifications (a default sink, the console link, the
	// backoff, an HTTP client that trusts a test server); zero: the operator's defaults.
	Notify notifyconfig.Options
}

// Manager is toolgate's reconcilers (and the simulated Kubelet) running against an Env.
type Manager struct {
	Kubelet *Kubelet
	// Client is the manager's client: reads come from its informer cache, as the
	// reconcilers' do (trimmed by controllers.CacheOptions' transforms).
	Client client.Client
	cancel context.CancelFunc
	done   chan error
}

// StartManager starts toolgate's reconcilers in a controller-runtime manager against the
// Env, as the operator binary does (same cache restrictions), plus the simulated Kubelet.
func (e *Env) StartManager(opts ManagerOptions) (*Manager, error) {
	mgr, err := e.newManager()
	if err != nil {
		return nil, err
	}
	m := &Manager{Kubelet: opts.Kubelet, Client: mgr.GetClient(), done: make(chan error, 1)}
	if m.Kubelet == nil && !opts.NoKubelet {
		m.Kubelet = NewKubelet(mgr.GetClient())
	}
	call, err := opts.Call.operator()
	if err != nil {
		return nil, err
	}
	setup := controllers.Options{Call: call, Clock: opts.Clock, AuditLogger: opts.AuditLogger, Notify: opts.Notify}
	if opts.TraceExporter != nil {
		setup.Tracer = controllers.TraceTo(opts.TraceExporter)
	}
	if opts.CollectGarbage {
		if err := setupGarbageCollector(mgr); err != nil {
			return nil, err
		}
	}
	if m.Kubelet != nil {
		setup.Logs, setup.Warm, setup.Session = m.Kubelet, warmExecutor{m.Kubelet}, sessionTransport{m.Kubelet}
		if !opts.KubeletRunsApart {
			m.Kubelet.SetClient(mgr.GetClient())
			if err := m.Kubelet.SetupWithManager(mgr); err != nil {
				return nil, err
			}
		}
	}
	if err := controllers.Setup(mgr, setup); err != nil {
		return nil, err
	}
	return m, m.start(mgr)
}

// StartKubelet runs k (the simulated Kubelet, Job controller, TTL controller and garbage
// collector) in a manager of its own, as a cluster runs them apart from the operator: pass
// the same k to StartManager with KubeletRunsApart, and the Kubelet keeps playing Pods
// while the operator's manager is stopped.
func (e *Env) StartKubelet(k *Kubelet) (*Manager, error) {
	mgr, err := e.newManager()
	if err != nil {
		return nil, err
	}
	k.Client = mgr.GetClient()
	if err := k.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	m := &Manager{Kubelet: k, done: make(chan error, 1)}
	return m, m.start(mgr)
}

func (e *Env) newManager() (ctrl.Manager, error) {
	return ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  e.Scheme,
		Cache:   controllers.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Suites start several managers in one process (restart specs).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
}

// start runs mgr until Stop and waits for its cache to sync.
func (m *Manager) start(mgr ctrl.Manager) error {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		m.cancel = nil
		return errors.Join(errors.New("the manager's cache did not sync"), <-m.done)
	}
	return nil
}

// Stop stops the manager and waits until it has stopped; stopping it again does nothing.
func (m *Manager) Stop() error {
	if m == nil || m.cancel == nil {
		return nil
	}
	m.cancel()
	m.cancel = nil
	return <-m.done
}
