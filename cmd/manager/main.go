// Command manager is the toolgate operator: it registers tools and walks ToolCalls through
// the pipeline, running tool bodies as sandboxed Jobs.
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/internal/metrics/serving"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

func main() {
	var metricsAddr, metricsCertDir, probeAddr, cpuLimit, memLimit, storageLimit, scratchLimit string
	var metricsSecure, enableHTTP2 bool
	opts := controllers.DefaultCallOptions()
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "address the Prometheus metrics endpoint binds to (0 disables it)")
	flag.BoolVar(&metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to authenticated, authorised clients only "+
		"(a TokenReview and a SubjectAccessReview for GET /metrics); false serves plain HTTP to anyone")
	flag.StringVar(&metricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for the metrics endpoint (default: a self-signed certificate)")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "allow HTTP/2 on the metrics endpoint (off: the HTTP/2 Rapid Reset and Stream Cancellation CVEs)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address the health and readiness probes bind to")
	leader := bindLeader(flag.CommandLine)
	flag.StringVar(&opts.Job.RunnerImage, "runner-image", opts.Job.RunnerImage, "image holding the runner at "+podcontract.ImageRunner+" (the operator's own image)")
	retention := bindRetention(flag.CommandLine, opts.JobRetention)
	flag.IntVar(&opts.MaxArgumentBytes, "max-argument-bytes", opts.MaxArgumentBytes, "largest canonical arguments accepted (at most 120 KiB: they travel in one environment variable)")
	flag.IntVar(&opts.Workers, "toolcall-workers", opts.Workers, "ToolCalls reconciled at once")
	flag.DurationVar(&opts.DeadlineGrace, "deadline-grace", opts.DeadlineGrace, "added to a tool's timeout before the operator ends an attempt nobody reported on; also how long, after its grace period, a stopped attempt's Pod that never confirms it stopped holds its session before it is force-deleted")
	flag.DurationVar(&opts.LogReadTimeout, "log-read-timeout", opts.LogReadTimeout, "longest pods/log read of a result carried in the Pod log (then ResultUnreadable)")
	flag.StringVar(&cpuLimit, "default-cpu-limit", "1", "CPU limit of tool Pods whose Tool sets none")
	flag.StringVar(&memLimit, "default-memory-limit", "256Mi", "memory limit of tool Pods whose Tool sets none")
	flag.StringVar(&storageLimit, "default-ephemeral-storage-limit", "1Gi", "ephemeral-storage limit of tool Pods whose Tool sets none (emptyDirs, logs: what a Pod may write to the node's disk)")
	flag.StringVar(&opts.Workspace.StorageClass, "workspace-storage-class", "", "StorageClass of session workspace claims whose ToolScope's spec.workspace names none; empty: the cluster's default StorageClass")
	flag.StringVar(&scratchLimit, "default-scratch-size-limit", "256Mi", "sizeLimit of each emptyDir of tool Pods whose Tool sets no sandbox.scratchSizeLimit")
	flag.StringVar(&opts.Job.DefaultRuntimeClassName, "default-runtime-class", "", "RuntimeClass of tool Pods whose Tool sets no sandbox.runtimeClassName (e.g. gvisor); empty: the node's default runtime")
	flag.DurationVar(&opts.Retention.TTL, "toolcall-ttl", opts.Retention.TTL, "how long a finished ToolCall is kept when neither it (spec.ttlSecondsAfterFinished) nor its tool (spec.callTTLSecondsAfterFinished) says; 0 keeps such calls forever")
	flag.DurationVar(&opts.Retention.MinTTL, "toolcall-min-ttl", opts.Retention.MinTTL, "the shortest a finished ToolCall is kept when it sets its own spec.ttlSecondsAfterFinished: a call may ask to be kept longer, never shorter (retention is the platform's); 0: no floor")
	flag.DurationVar(&opts.Retention.MaxTTL, "toolcall-max-ttl", opts.Retention.MaxTTL, "the longest a finished ToolCall is kept whatever it (spec.ttlSecondsAfterFinished) or its tool (spec.callTTLSecondsAfterFinished) asks, also for calls that ended with a later status.expiresAt; at least --toolcall-min-ttl and --toolcall-ttl; must be positive")
	flag.IntVar(&opts.Retention.HistorySucceeded, "toolcall-history-succeeded", 0, "keep at most this many Succeeded ToolCalls per namespace, shared fairly between requesters (each keeps its newest; one over its share loses its oldest first); 0: no limit")
	flag.IntVar(&opts.Retention.HistoryFailed, "toolcall-history-failed", 0, "keep at most this many Failed or Denied ToolCalls per namespace, shared like --toolcall-history-succeeded; 0: no limit")
	flag.BoolVar(&opts.Retention.AuditIncludeContent, "audit-include-content", false, "put the arguments and the result (content and error message) into each call's audit record (logger \"audit\"); off: digests and sizes only")
	netpolMode, egressExcept := string(opts.NetworkPolicy.Mode), strings.Join(opts.NetworkPolicy.EgressExcept, ",")
	flag.StringVar(&netpolMode, "network-policy", netpolMode, "ensure: create toolgate's tool NetworkPolicies in every namespace where a tool runs and refuse calls the namespace's policies do not isolate; require: only refuse (the platform writes the policies); off: sandbox.network is a Pod label only")
	flag.StringVar(&egressExcept, "egress-except", egressExcept, "comma-separated CIDRs the egress-only NetworkPolicy never allows (the cluster's node, Pod and Service ranges, link-local, metadata)")
	bindAdmission(flag.CommandLine, &opts.Admission)
	bindStartAllowance(flag.CommandLine, &opts.Job.StartAllowance)
	bindTestHooks(flag.CommandLine, &opts)
	notifyOpts := bindNotify(flag.CommandLine)
	egressOpts := bindEgressProxy(flag.CommandLine)
	tracingOpts := bindTracing(flag.CommandLine)
	sessionOpts := bindSession(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	jobRetention, notice, err := retention.resolve()
	if err != nil {
		log.Error(err, "invalid Job retention")
		os.Exit(2)
	}
	opts.JobRetention = jobRetention
	if notice != "" {
		log.Info(notice)
	}

	if err := leader.validate(); err != nil {
		log.Error(err, "invalid leader-election settings")
		os.Exit(2)
	}

	if err := validateRetention(opts.Retention); err != nil {
		log.Error(err, "invalid retention settings")
		os.Exit(2)
	}

	if err := errors.Join(opts.Admission.Validate(), validateStartAllowance(opts.Job.StartAllowance)); err != nil {
		log.Error(err, "invalid admission settings")
		os.Exit(2)
	}
	if err := validateTestHooks(opts); err != nil {
		log.Error(err, "invalid test hook")
		os.Exit(2)
	} else if opts.TestHoldBeforeJobCreate > 0 {
		log.Info("TEST HOOK ON: the Job creates of labelled calls are held (never in a real install)", "label", podcontract.LabelTestHold, "hold", opts.TestHoldBeforeJobCreate)
	}

	if rc := opts.Job.DefaultRuntimeClassName; rc != "" && len(validation.IsDNS1123Subdomain(rc)) > 0 {
		log.Error(errors.New(strings.Join(validation.IsDNS1123Subdomain(rc), "; ")), "invalid --default-runtime-class", "value", rc)
		os.Exit(2)
	}

	for name, value := range map[string]string{"cpu": cpuLimit, "memory": memLimit, "ephemeral-storage": storageLimit, "scratch": scratchLimit} {
		q, err := resource.ParseQuantity(value)
		if err == nil && q.Sign() <= 0 {
			err = errors.New("must be positive")
		}
		if err != nil {
			log.Error(err, "invalid default limit", "resource", name, "value", value)
			os.Exit(2)
		}
		if name == "scratch" {
			opts.Job.ScratchSizeLimit = q
			continue
		}
		opts.Job.DefaultResources.Limits[corev1ResourceName(name)] = q
	}

	if opts.NetworkPolicy.Mode, err = netisolation.ParseMode(netpolMode); err == nil {
		opts.NetworkPolicy.EgressExcept, err = netisolation.ParseEgressExcept(egressExcept)
	}
	if err != nil {
		log.Error(err, "invalid network policy settings")
		os.Exit(2)
	}

	if opts.EgressProxy, err = egressOpts.options(); err != nil {
		log.Error(err, "invalid egress proxy settings")
		os.Exit(2)
	}

	if opts.Session, err = sessionOpts.options(); err != nil {
		log.Error(err, "invalid session sandbox settings")
		os.Exit(2)
	}

	notifications, err := notifyOpts.options()
	if err != nil {
		log.Error(err, "invalid approval notification settings")
		os.Exit(2)
	}
	opts.Job.ToolOTLPEndpoint, err = tracingOpts.toolOTLPEndpoint()
	if err != nil {
		log.Error(err, "invalid tracing settings")
		os.Exit(2)
	}
	tracer, err := tracing.New(context.Background(), tracingOpts.Options)
	if err != nil {
		log.Error(err, "invalid tracing settings")
		os.Exit(2)
	}

	scheme := runtime.NewScheme()
	must(clientgoscheme.AddToScheme(scheme))
	must(v1alpha1.AddToScheme(scheme))
	mgrOpts := ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controllers.CacheOptions(),
		Metrics:                 serving.Options(metricsAddr, metricsSecure, enableHTTP2, metricsCertDir),
		HealthProbeBindAddress:  probeAddr,
		GracefulShutdownTimeout: ptrDuration(10 * time.Second),
	}
	leader.apply(&mgrOpts)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), mgrOpts)
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	if err := controllers.Setup(mgr, controllers.Options{Call: opts, RegisterMetrics: true, Notify: notifications, Tracer: tracer}); err != nil {
		log.Error(err, "unable to set up the controllers")
		os.Exit(1)
	}
	must(mgr.AddHealthzCheck("healthz", healthz.Ping))
	must(mgr.AddReadyzCheck("readyz", healthz.Ping))
	must(mgr.AddReadyzCheck("informers", cacheSynced(mgr.GetCache())))
	log.Info("starting the manager")
	// Exit as soon as the manager returns: it released the Lease on the way out
	// (LeaderElectionReleaseOnCancel), so a standby may already be reconciling.
	err = mgr.Start(ctrl.SetupSignalHandler())
	if terr := shutdownTracer(tracer); terr != nil {
		log.Error(terr, "could not send the last spans")
	}
	if err != nil {
		log.Error(err, "the manager stopped with an error")
		os.Exit(1)
	}
}
