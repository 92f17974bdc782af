package controllers

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// This file maps API objects to the pipeline's own input types: data flows one way,
// API object → pipeline input → verdicts → status.

func policySpec(p *v1alpha1.ToolPolicy) pipeline.PolicySpec {
	spec := pipeline.PolicySpec{
		Name:  p.Name,
		Stage: pipeline.Stage(p.Spec.Stage),
		Order: int(p.Spec.Order),
		Tools: p.Spec.Tools,
	}
	if p.Spec.ApprovalWindow != nil {
		spec.ApprovalWindow = p.Spec.ApprovalWindow.Duration
	}
	for _, r := range p.Spec.Rules {
		spec.Rules = append(spec.Rules, pipeline.Rule{
			Name:       r.Name,
			Expression: r.Expression,
			Verdict:    pipeline.Verdict(r.Verdict),
			Action:     pipeline.Action(r.Action),
			Replace:    r.Replace,
			Message:    r.Message,
		})
	}
	return spec
}

func retryPolicy(spec *v1alpha1.ToolSpec) pipeline.RetryPolicy {
	p := pipeline.RetryPolicy{MaxAttempts: int(spec.Retry.MaxAttempts)}
	for _, r := range spec.Retry.OnReasons {
		p.OnReasons = append(p.OnReasons, pipeline.Reason(r))
	}
	return p
}

// policyInput is what policies see of a call (CEL variables tool, call and arguments),
// built from the admission snapshot in status only: the tool as resolved (name, scope,
// annotations) and the call's labels as admitted. Admission and post-execute both build it
// here, after admission recorded the snapshot, so both stages see the same tool and call
// whatever happens to the Tool or the call's labels in between.
func policyInput(call *v1alpha1.ToolCall, frozen *pipeline.Frozen) pipeline.Input {
	return catalog.CallInput(call, frozen)
}

// snapshotAnnotations is the part of a tool's annotations its snapshot keeps: all but
// kubectl's last-applied-configuration, a second copy of the spec.
func snapshotAnnotations(annotations map[string]string) map[string]string {
	out := maps.Clone(annotations)
	delete(out, corev1.LastAppliedConfigAnnotation)
	if len(out) == 0 {
		return nil
	}
	return out
}

// compileSchema compiles an optional schema: an absent one is nil (any value passes).
func compileSchema(c *pipeline.Compiler, raw []byte) (*pipeline.Schema, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return c.CompileSchema(raw)
}
