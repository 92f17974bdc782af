package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

func newDescribeCommand(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "describe CALL",
		Short: "Show a call in detail: its stages as a timeline, tool, arguments, result, Job, Pods and events",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := f.AgentClient(ctx)
			if err != nil {
				return err
			}
			kube, err := f.Kubernetes()
			if err != nil {
				return err
			}
			v, err := gatherDescribe(ctx, c, kube, args[0])
			if err != nil {
				return err
			}
			fprintf(f.IO.Out, "%s", formatDescribe(*v, time.Now()))
			return nil
		},
	}
}

// gatherDescribe reads the call and what belongs to it. Only the call itself must be
// readable; for the rest a note says what could not be read.
func gatherDescribe(ctx context.Context, c *agentclient.Client, kube kubernetes.Interface, name string) (*describeView, error) {
	ns := c.Namespace
	call, err := c.Get(ctx, name)
	if err != nil {
		return nil, explain(err, apiOp{verb: "get", resource: "toolcalls.toolgate.dev", namespace: ns})
	}
	v := &describeView{Call: call}
	note := func(err error, op apiOp) {
		v.Notes = append(v.Notes, explain(err, op).Error())
	}
	approval := &v1alpha1.ToolCallApproval{}
	switch err := c.C.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, approval); {
	case err == nil:
		v.Approval = approval
	case !apierrors.IsNotFound(err):
		note(err, apiOp{verb: "get", resource: "toolcallapprovals.toolgate.dev", namespace: ns})
	}
	if ref := call.Status.Job; ref != nil {
		job, err := kube.BatchV1().Jobs(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			v.Job = job
		case !apierrors.IsNotFound(err):
			note(err, apiOp{verb: "get", resource: "jobs.batch", namespace: ns})
		}
	}
	pods, err := callPods(ctx, kube, ns, name, "")
	if err != nil {
		note(err, apiOp{verb: "list", resource: "pods", namespace: ns})
	}
	v.Pods = pods
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "ToolCall", "involvedObject.name": name,
	}.String()})
	if err != nil {
		note(err, apiOp{verb: "list", resource: "events", namespace: ns})
	} else {
		v.Events = events.Items
	}
	return v, nil
}

// callPods lists the tool Pods of a call (of one attempt when attempt is set): labelled
// with the call, and carrying its full name in the toolgate.dev/call-name annotation.
func callPods(ctx context.Context, kube kubernetes.Interface, ns, call, attempt string) ([]corev1.Pod, error) {
	set := labels.Set{v1alpha1.LabelCall: v1alpha1.CallLabelValue(call)}
	if attempt != "" {
		set[v1alpha1.LabelAttempt] = attempt
	}
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: set.String()})
	if err != nil {
		return nil, err
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.Annotations[v1alpha1.AnnotationCallName] == call {
			pods = append(pods, p)
		}
	}
	return pods, nil
}
