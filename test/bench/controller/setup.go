package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
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
func start(mgr ctrl.Manager) (*running, error) { return startWithin(mgr, 30*time.Second) }

// startWithin is start with a bound on the cache sync (an operator listing many calls on a
// loaded machine needs longer).
func startWithin(mgr ctrl.Manager, bound time.Duration) (*running, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, bound)
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
func startManagers(env *toolgatetest.Env, operator, cluster *Counter, o options) (op, kl *running, kubelet *toolgatetest.Kubelet, err error) {
	kl, kubelet, err = startKubelet(env, cluster, o.kubeletWorkers)
	if err != nil {
		return nil, nil, nil, err
	}
	opMgr, err := ctrl.NewManager(counted(env.Config, operator), ctrl.Options{
		Scheme:     env.Scheme,
		Cache:      cacheOptions(o),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: o.operatorWorkers},
	})
	if err != nil {
		return nil, nil, nil, errors.Join(err, kl.stop())
	}
	if err := controllers.Setup(opMgr, controllers.Options{Call: callOptions(o), Logs: kubelet, Warm: warmKubelet{kubelet}}); err != nil {
		return nil, nil, nil, errors.Join(err, kl.stop())
	}
	if op, err = start(opMgr); err != nil {
		return nil, nil, nil, errors.Join(fmt.Errorf("operator: %w", err), kl.stop())
	}
	return op, kl, kubelet, nil
}

// warmKubelet is the simulated Kubelet as the operator's WarmExecutor, as the kit's
// StartManager wires it (the kit's API names no controllers type).
type warmKubelet struct{ k *toolgatetest.Kubelet }

func (w warmKubelet) Handover(ctx context.Context, pod types.NamespacedName, line []byte) (controllers.WarmStream, error) {
	s, err := w.k.Handover(ctx, pod, line)
	return controllers.WarmStream{HandedOver: s.HandedOver, StdoutTail: s.StdoutTail}, err
}

// startKubelet starts the simulated Kubelet (Job controller, TTL controller, garbage
// collector's foreground part) in a manager of its own, on its own counted config.
func startKubelet(env *toolgatetest.Env, cluster *Counter, kubeletWorkers int) (*running, *toolgatetest.Kubelet, error) {
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
	kl, err := start(kubeletMgr)
	if err != nil {
		return nil, nil, fmt.Errorf("simulated Kubelet: %w", err)
	}
	return kl, kubelet, nil
}

// operators is the running operator (in this process or its own) and simulated Kubelet.
type operators struct {
	op, kl  *running
	child   *operatorProcess
	kubelet *toolgatetest.Kubelet
	env     *toolgatetest.Env
	dir     string
}

// startChild starts a new operator process (the previous one stopped).
func (s *operators) startChild(o options) error {
	o.qps, o.burst = float64(s.env.Config.QPS), s.env.Config.Burst
	child, err := startOperatorProcess(s.env.Config, s.kubelet, s.dir, o)
	if err != nil {
		return err
	}
	s.child = child
	progress(fmt.Sprintf("operator process pid %d", child.pid()))
	return nil
}

// startAll starts the simulated Kubelet and the operator, in this process or (with
// -operator-process) in a child process.
func startAll(env *toolgatetest.Env, operator, cluster *Counter, o options) (*operators, error) {
	if !o.operatorProcess {
		op, kl, kubelet, err := startManagers(env, operator, cluster, o)
		return &operators{op: op, kl: kl, kubelet: kubelet}, err
	}
	kl, kubelet, err := startKubelet(env, cluster, o.kubeletWorkers)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "bench-controller-")
	if err != nil {
		return nil, errors.Join(err, kl.stop())
	}
	o.qps, o.burst = float64(env.Config.QPS), env.Config.Burst
	child, err := startOperatorProcess(env.Config, kubelet, dir, o)
	if err != nil {
		return nil, errors.Join(err, kl.stop())
	}
	progress(fmt.Sprintf("operator process pid %d", child.pid()))
	return &operators{kl: kl, child: child, kubelet: kubelet, env: env, dir: dir}, nil
}

// operatorCounts is a snapshot of the operator's request counts (local counts the
// in-process operator's).
func (s *operators) operatorCounts(local *Counter) Counts {
	if s.child == nil {
		return local.Snapshot()
	}
	rep, err := s.child.report()
	if err != nil {
		progress("operator process report: " + err.Error())
	}
	return rep.counts()
}

// registryCounts are client-go's request counter and the reconciles, summed over this
// process and the operator process.
func (s *operators) registryCounts() (int, map[string]int) {
	rest, reconciles := registryCounts()
	if s.child != nil {
		rep, err := s.child.report()
		if err != nil {
			progress("operator process report: " + err.Error())
		}
		rest += rep.REST
		for k, v := range rep.Reconciles {
			reconciles[k] += v
		}
	}
	return rest, reconciles
}

// operatorMemory is the operator process's memory (after a forced GC there).
func (s *operators) operatorMemory() Memory {
	rep, err := s.child.report()
	if err != nil {
		progress("operator process report: " + err.Error())
	}
	return rep.Memory
}

func (s *operators) stop() error {
	if s == nil {
		return nil
	}
	return errors.Join(s.op.stop(), s.child.stop(), s.kl.stop())
}

// warmPoolSize is -warm: the echo Tool's warm pool (0: none, every call cold).
var warmPoolSize int

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
	if warmPoolSize > 0 {
		w.WarmPool(int32(warmPoolSize), 0)
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
