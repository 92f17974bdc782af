package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/display"
)

type logsOptions struct {
	f       *Factory
	attempt int
	follow  bool
	raw     bool
}

func newLogsCommand(f *Factory) *cobra.Command {
	o := &logsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "logs CALL",
		Short: "Print the logs of a call's tool Pod (the last attempt unless --attempt)",
		Long: `Print the logs of a call's tool Pod (the last attempt unless --attempt).

The tool body wrote the log: it is shown as text, with control characters, escape
sequences, bidi and zero-width characters and invalid UTF-8 escaped (\x1b, \u202e, \xff)
and lines over 4096 characters cut with a marker. --raw prints the log's bytes as they are
(for a file or a pipe; a terminal would run the escape sequences in it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().IntVar(&o.attempt, "attempt", 0, "the attempt whose Pod to read (default: the last)")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "stream the log while the Pod runs")
	cmd.Flags().BoolVar(&o.raw, "raw", false, "print the log's bytes exactly, escape sequences included (not for a terminal)")
	return cmd
}

func (o *logsOptions) run(ctx context.Context, name string) error {
	c, err := o.f.AgentClient(ctx)
	if err != nil {
		return err
	}
	ns := c.Namespace
	call, err := c.Get(ctx, name)
	if err != nil {
		return explain(err, apiOp{verb: "get", resource: "toolcalls.toolgate.dev", namespace: ns})
	}
	attempts := len(call.Status.Attempts)
	if attempts == 0 {
		return Exitf(ExitFailure, "call %s has not run (phase %s): it has no Pod and no logs", name, phaseOf(call))
	}
	n := o.attempt
	if n == 0 {
		n = attempts
	}
	if n < 1 || n > attempts {
		return Usagef("call %s has %d attempt(s): --attempt must be between 1 and %d", name, attempts, attempts)
	}
	kube, err := o.f.Kubernetes()
	if err != nil {
		return err
	}
	pods, err := callPods(ctx, kube, ns, name, strconv.Itoa(n))
	if err != nil {
		return explain(err, apiOp{verb: "list", resource: "pods", namespace: ns})
	}
	if len(pods) == 0 {
		return Exitf(ExitFailure, "no Pod is left for attempt %d of call %s (Job %s): finished Jobs and their Pods are deleted after ttlSecondsAfterFinished",
			n, name, call.Status.Attempts[n-1].JobName)
	}
	return o.copyLog(ctx, kube, ns, newestPod(pods))
}

func (o *logsOptions) copyLog(ctx context.Context, kube kubernetes.Interface, ns string, pod *corev1.Pod) error {
	// The signer's log: the body's stderr, redacted (the body's own container logs nothing).
	opts := &corev1.PodLogOptions{Container: v1alpha1.SignerContainerName, Follow: o.follow}
	stream, err := kube.CoreV1().Pods(ns).GetLogs(pod.Name, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("reading the log of Pod %s: %w", pod.Name, explain(err, apiOp{verb: "get", resource: "pods/log", namespace: ns}))
	}
	defer func() { _ = stream.Close() }()
	return writeLog(o.f.IO.Out, stream, o.raw)
}

// writeLog copies a log to out: shown as text (display.Text), or byte for byte when raw.
func writeLog(out io.Writer, log io.Reader, raw bool) error {
	if raw {
		_, err := io.Copy(out, log)
		return err
	}
	w := display.Options{Multiline: true, MaxLine: display.DefaultMaxLine}.NewWriter(out)
	if _, err := io.Copy(w, log); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// newestPod is the most recently created Pod (a Job may have replaced one).
func newestPod(pods []corev1.Pod) *corev1.Pod {
	newest := &pods[0]
	for i := range pods {
		if pods[i].CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = &pods[i]
		}
	}
	return newest
}
