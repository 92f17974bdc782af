package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// counted returns a copy of cfg whose every request (clients, informers, event recorder:
// everything a manager builds from it) goes through c.
func counted(cfg *rest.Config, c *Counter) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(c.Wrap)
	return out
}

// running is a started controller-runtime manager.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func (r *running) stop() error {
	if r == nil {
		return nil
	}
	r.cancel()
	return <-r.done
}

// start runs mgr and waits until its caches have synced.
func start(mgr ctrl.Manager) (*running, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return nil, errors.Join(errors.New("a manager's cache did not sync"), <-r.done)
	}
	return r, nil
}

// startManagers starts the operator exactly as toolgatetest.Env.StartManager does, but on
// its own counted config, and the simulated Kubelet in a separate manager with its own
// counted config: the Kubelet's writes are the fake cluster's, not the operator's.
// operatorWorkers other than 0 sets the operator's MaxConcurrentReconciles (a what-if; 0
// keeps controller-runtime's default, as StartManager and cmd/manager do).
func startManagers(env *toolgatetest.Env, operator, cluster *Counter, operatorWorkers, kubeletWorkers int) (op, kl *running, err error) {
	kubeletMgr, err := ctrl.NewManager(counted(env.Config, cluster), ctrl.Options{
		Scheme:  env.Scheme,
		Cache:   controllers.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true),
			MaxConcurrentReconciles: kubeletWorkers},
	})
	if err != nil {
		return nil, nil, err
	}
	kubelet := toolgatetest.NewKubelet(kubeletMgr.GetClient())
	if err := kubelet.SetupWithManager(kubeletMgr); err != nil {
		return nil, nil, err
	}

	opMgr, err := ctrl.NewManager(counted(env.Config, operator), ctrl.Options{
		Scheme:     env.Scheme,
		Cache:      controllers.CacheOptions(),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: operatorWorkers},
	})
	if err != nil {
		return nil, nil, err
	}
	if err := controllers.Setup(opMgr, controllers.Options{Logs: kubelet}); err != nil {
		return nil, nil, err
	}

	if kl, err = start(kubeletMgr); err != nil {
		return nil, nil, fmt.Errorf("simulated Kubelet: %w", err)
	}
	if op, err = start(opMgr); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("operator: %w", err), kl.stop())
	}
	return op, kl, nil
}

// echoTool is the benchmark's tool: the simulated body echoes its arguments. output is
// its output schema (JSON); empty leaves it out.
func echoTool(ns, output string) *v1alpha1.Tool {
	w := toolgatetest.MakeTool("echo", ns).Image("example/echo:1").Command("/echo").
		Parameters(map[string]any{
			"type":       "object",
			"properties": map[string]any{"text": map[string]any{"type": "string", "maxLength": 100}},
			"required":   []string{"text"},
		})
	if output != "" {
		w.Output([]byte(output))
	}
	return w.Obj()
}

// createTool creates the echo Tool and waits until the operator registered it.
func createTool(ctx context.Context, c client.Client, ns, output string) error {
	tool := echoTool(ns, output)
	if err := c.Create(ctx, tool); err != nil {
		return fmt.Errorf("creating the echo Tool: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := &v1alpha1.Tool{}
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(tool), got)
		if err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionRegistered) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("the echo Tool was not Registered within 30s: %w", err)
			}
			return fmt.Errorf("the echo Tool was not Registered within 30s: conditions %+v", got.Status.Conditions)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
