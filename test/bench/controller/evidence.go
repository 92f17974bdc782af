package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// timeline renders what the harness's watches saw of a call, relative to its creation.
func timeline(c callTimes) string {
	var parts []string
	for _, e := range []struct {
		what string
		at   time.Time
	}{{"Job added", c.jobAdded}, {"Pod terminated", c.podDone}, {"Job Complete", c.jobComplete}, {"terminal", c.frozen}} {
		if !e.at.IsZero() {
			parts = append(parts, fmt.Sprintf("%s +%.1fms", e.what, float64(e.at.Sub(c.created).Microseconds())/1000))
		}
	}
	return strings.Join(parts, ", ")
}

// explain reads, after the run (so possibly later than a timeout), what the API server
// holds for a failed call: its phase and Executed condition, its Jobs (deletion, conditions) and their Pods (phase, tool container state).
func explain(ctx context.Context, c client.Client, ns, name string) string {
	var out []string
	call := &v1alpha1.ToolCall{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call); err == nil {
		out = append(out, "phase="+string(call.Status.Phase))
		for _, cond := range call.Status.Conditions {
			if cond.Type == v1alpha1.ConditionExecuted {
				out = append(out, fmt.Sprintf("Executed=%s %s %q", cond.Status, cond.Reason, cond.Message))
			}
		}
	}
	byCall := client.MatchingLabels{podcontract.LabelCall: podspec.CallLabelValue(name)}
	jobs := &batchv1.JobList{}
	if err := c.List(ctx, jobs, client.InNamespace(ns), byCall); err == nil {
		for _, j := range jobs.Items {
			var conds []string
			for _, jc := range j.Status.Conditions {
				conds = append(conds, string(jc.Type)+"="+string(jc.Status))
			}
			out = append(out, fmt.Sprintf("Job %s deleting=%t conditions=[%s]", j.Name,
				!j.DeletionTimestamp.IsZero(), strings.Join(conds, " ")))
		}
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns), byCall); err == nil {
		for _, p := range pods.Items {
			state := "no tool container status"
			for _, cs := range p.Status.ContainerStatuses {
				if t := cs.State.Terminated; cs.Name == podcontract.ToolContainerName && t != nil {
					state = fmt.Sprintf("tool container terminated exit=%d reason=%s", t.ExitCode, t.Reason)
				}
			}
			out = append(out, fmt.Sprintf("Pod %s deleting=%t phase=%s, %s", p.Name,
				!p.DeletionTimestamp.IsZero(), p.Status.Phase, state))
		}
	}
	return strings.Join(out, "; ")
}

// addEvidence fills the timeline and the API server's view of (up to 20) failures.
func (rep *Report) addEvidence(ctx context.Context, c client.Client, ns string, calls map[string]callTimes) {
	for i := range rep.Failures {
		if i == 20 {
			return
		}
		f := &rep.Failures[i]
		f.Timeline = timeline(calls[f.Call])
		f.Cluster = explain(ctx, c, ns, f.Call)
	}
}
