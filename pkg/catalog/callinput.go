package catalog

import (
	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// CallInput is what policies and presentation expressions see of a call (CEL variables
// tool, call and arguments), built from the admission snapshot in status only: the tool as
// resolved (name, scope, annotations) and the call's labels as admitted. The operator's
// admission and post-execute stages and the approval console all build it here, so a
// Tool's presentation renders the call the policies judged.
func CallInput(call *v1alpha1.ToolCall, frozen *pipeline.Frozen) pipeline.Input {
	in := pipeline.Input{
		Call: pipeline.CallInfo{
			Namespace:       call.Namespace,
			Session:         call.Spec.Session,
			Requester:       call.Spec.Requester,
			RequesterGroups: call.Spec.RequesterGroups,
			Labels:          call.Status.CallLabels,
		},
		Arguments: frozen,
	}
	if snap := call.Status.Tool; snap != nil {
		in.Tool = pipeline.ToolInfo{Scope: snap.Scope, Annotations: snap.Annotations, Name: snap.Name}
		if snap.Spec != nil {
			in.Tool.Name = ToolName(snap.Spec, snap.Name)
		}
	}
	return in
}
