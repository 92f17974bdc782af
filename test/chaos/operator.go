package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/internal/metrics/serving"
)

// runOperator is the "operator" role: the manager as cmd/manager builds it (same scheme,
// cache restrictions, controllers.Setup with metrics registered; no leader election, as
// cmd/manager's default), with two differences only: the metrics and probe endpoints are
// off (several run on one machine), and results carried in the Pod log are read from the
// harness's simulated kubelet over loopback HTTP instead of pods/log (envtest has no
// kubelet). It runs until it is killed.
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
	if err := controllers.Setup(mgr, controllers.Options{Call: opts, RegisterMetrics: true, Logs: httpLogs{base: *logs}}); err != nil {
		return fmt.Errorf("setting up the controllers: %w", err)
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// httpLogs is the operator role's controllers.LogReader: a GET to the harness's log server,
// which answers from the simulated kubelet (Kubelet.TailLog) with the same bounds.
type httpLogs struct{ base string }

func (h httpLogs) TailLog(ctx context.Context, namespace, pod, container string, tailLines, limitBytes int64) ([]byte, error) {
	q := url.Values{"namespace": {namespace}, "pod": {pod}, "container": {container},
		"tailLines": {strconv.FormatInt(tailLines, 10)}, "limitBytes": {strconv.FormatInt(limitBytes, 10)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/log?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max(limitBytes, 0)+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("log server: %s: %s", resp.Status, body)
	}
	if int64(len(body)) > limitBytes {
		body = body[:limitBytes]
	}
	return body, nil
}

// logServer serves a LogReader (the simulated kubelet) to operator processes.
func logServer(r controllers.LogReader) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /log", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		tail, err1 := strconv.ParseInt(q.Get("tailLines"), 10, 64)
		limit, err2 := strconv.ParseInt(q.Get("limitBytes"), 10, 64)
		if err1 != nil || err2 != nil {
			http.Error(w, "tailLines and limitBytes must be numbers", http.StatusBadRequest)
			return
		}
		data, err := r.TailLog(req.Context(), q.Get("namespace"), q.Get("pod"), q.Get("container"), tail, limit)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		_, _ = w.Write(data)
	})
	return mux
}
