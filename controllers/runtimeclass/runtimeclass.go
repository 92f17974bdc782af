// Package runtimeclass is the runtime class feature (feature.RuntimeClass): the
// RuntimeClass a tool's Pods run under (its sandbox.runtimeClassName, else the operator's
// default) and the scopes that require one. The Pod builder sets runtimeClassName; what the
// feature adds is admission: a call whose body would run under another runtime than its
// scope chain requires is denied.
package runtimeclass

import (
	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
)

// requiredMessage is what the model reads of a call denied for its runtime: never the
// scope's or the class's name.
const requiredMessage = "the tool may not run in this scope: the scope requires another sandbox runtime"

// Feature is the runtime class feature.
type Feature struct {
	// Options are the operator's Pod settings (its default RuntimeClass).
	Options podspec.Options
}

var (
	_ feature.Feature  = Feature{}
	_ feature.Admitter = Feature{}
)

// Name is feature.RuntimeClass.
func (Feature) Name() feature.Name { return feature.RuntimeClass }

// Uses reports whether the tool's Pods run under a RuntimeClass (its own or the default).
func (f Feature) Uses(spec *v1alpha1.ToolSpec) bool {
	return f.Options.RuntimeClassOf(spec.Sandbox) != ""
}

// Admit checks the RuntimeClass the call's body would run under against every scope on
// its chain that requires one (pipeline.Index.RuntimeClassGuard); a Deny's feedback is the
// model's sentence.
func (f Feature) Admit(a feature.Admission) pipeline.Decision {
	d := a.Index.RuntimeClassGuard(a.Call.Spec.Scope, a.Call.Spec.Tool, f.Options.RuntimeClassOf(a.Spec.Sandbox))
	if d.Verdict == pipeline.Deny && d.Reason == pipeline.ReasonRuntimeClassRequired {
		d.Feedback = requiredMessage
	}
	return d
}
