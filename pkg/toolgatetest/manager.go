package toolgatetest

import (
	"context"
	"errors"
	"time"

	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/toolgate/toolgate/controllers"
)

// ManagerOptions configure StartManager. The zero value runs toolgate's reconcilers with
// the real clock and a fresh simulated Kubelet.
type ManagerOptions struct {
	// Clock is given to the reconcilers (use k8s.io/utils/clock/testing.FakePassiveClock to
	// move approval windows and deadlines).
	Clock clock.PassiveClock
	// Call overrides the pipeline settings; zero means controllers.DefaultCallOptions.
	Call controllers.CallOptions
	// Kubelet is reused across restarts (its scripts survive); nil creates one.
	Kubelet *Kubelet
	// NoKubelet runs no simulated Kubelet (Jobs then never run).
	NoKubelet bool
}

// Manager is toolgate's reconcilers (and the simulated Kubelet) running against an Env.
type Manager struct {
	Kubelet *Kubelet
	cancel  context.CancelFunc
	done    chan error
}

// StartManager starts toolgate's reconcilers in a controller-runtime manager against the
// Env, as the operator binary does (same cache restrictions), plus the simulated Kubelet.
func (e *Env) StartManager(opts ManagerOptions) (*Manager, error) {
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:  e.Scheme,
		Cache:   controllers.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Suites start several managers in one process (restart specs).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	m := &Manager{Kubelet: opts.Kubelet, done: make(chan error, 1)}
	if m.Kubelet == nil && !opts.NoKubelet {
		m.Kubelet = NewKubelet(mgr.GetClient())
	}
	setup := controllers.Options{Call: opts.Call, Clock: opts.Clock}
	if m.Kubelet != nil {
		m.Kubelet.Client = mgr.GetClient()
		setup.Logs = m.Kubelet
		if err := m.Kubelet.SetupWithManager(mgr); err != nil {
			return nil, err
		}
	}
	if err := controllers.Setup(mgr, setup); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return nil, errors.Join(errors.New("the manager's cache did not sync"), <-m.done)
	}
	return m, nil
}

// Stop stops the manager and waits until it has stopped.
func (m *Manager) Stop() error {
	if m == nil || m.cancel == nil {
		return nil
	}
	m.cancel()
	return <-m.done
}
