package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/internal/metrics/serving"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// runOperator is the "operator" role: the manager as cmd/manager builds it (same scheme,
// cache restrictions, controllers.Setup with metrics registered; no leader election, as
// cmd/manager's default), with these differences only: the metrics and probe endpoints are
// off (several run on one machine), results carried in the Pod log are read from the
// harness's simulated kubelet over loopback HTTP instead of pods/log (envtest has no
// kubelet), and session calls are handed to the harness's simulated session Pods over the
// same loopback server (tg.SessionClient) instead of mutual TLS to a Pod address (envtest
// Pods have none; the process still makes its own session CA, so a new process still
// cannot use an earlier one's Pods). It runs until it is killed.
func runOperator(args []string) error {
	fs := flag.NewFlagSet("operator", flag.ExitOnError)
	logs := fs.String("logs", "", "base URL of the harness's log server")
	opts := controllers.DefaultCallOptions()
	fs.DurationVar(&opts.DeadlineGrace, "deadline-grace", opts.DeadlineGrace, "as cmd/manager --deadline-grace")
	fs.IntVar(&opts.Workers, "toolcall-workers", opts.Workers, "as cmd/manager --toolcall-workers")
	verbose := fs.Bool("v", false, "log at info level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := zapcore.ErrorLevel
	if *verbose {
		level = zapcore.InfoLevel
	}
	ctrl.SetLogger(zap.New(zap.Level(level), zap.WriteTo(os.Stderr)))
	cfg, err := ctrl.GetConfig() // KUBECONFIG, as cmd/manager's ctrl.GetConfigOrDie
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controllers.CacheOptions(),
		Metrics:                serving.Options("0", false, false, ""),
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := controllers.Setup(mgr, controllers.Options{Call: opts, RegisterMetrics: true, Logs: tg.LogsClient{Base: *logs},
		Session: sessionTransport{tg.SessionClient{Base: *logs}}}); err != nil {
		return fmt.Errorf("setting up the controllers: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// sessionTransport is the operator process's session transport: the harness's simulated
// session Pods, reached through tg.SessionClient (nothing is kept per Pod).
type sessionTransport struct{ c tg.SessionClient }

func (t sessionTransport) Call(ctx context.Context, pod *corev1.Pod, line []byte) (controllers.SessionReply, error) {
	at, reply, err := t.c.Call(ctx, pod, line)
	return controllers.SessionReply{HandedOver: at, Bytes: reply}, err
}

func (sessionTransport) Forget(types.UID) {}
