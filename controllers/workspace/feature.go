package workspace

import (
	"context"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// Feature is the session workspace feature (feature.Workspace): a workspace tool's Pod
// mounts its session's claim, made on the session's first call (Claims); an attempt that
// never ran because its claim never bound ends WorkspaceUnbound; a ReadWrite workspace tool
// is a barrier in its session.
type Feature struct {
	// Claims make ready the sessions' claims (nil: Uses and SessionSafe only).
	Claims *Claims
}

var (
	_ feature.Feature          = Feature{}
	_ feature.PodPreparer      = Feature{}
	_ feature.EndingClassifier = Feature{}
	_ feature.SessionOrderer   = Feature{}
	_ feature.Prestarter       = Feature{}
)

// Prestartable: the session's workspace is shared by its tools, so their Pods may start
// together; but not a tool with credentials, whose call's preparation records them on the
// session's claim (Claims.For).
func (Feature) Prestartable(spec *v1alpha1.ToolSpec) bool {
	return len(workspaceCredentials(spec)) == 0
}

// Name is feature.Workspace.
func (Feature) Name() feature.Name { return feature.Workspace }

// Uses reports whether the tool mounts a session workspace.
func (Feature) Uses(spec *v1alpha1.ToolSpec) bool { return Access(spec) != "" }

// PreparePod mounts the session's workspace in the attempt's Pod and labels the Pod's
// objects with the claim, so that the claim's retention finds the Jobs whose Pods hold it
// (Claims.For: not ok is a refusal or a wait).
func (f Feature) PreparePod(ctx context.Context, call *v1alpha1.ToolCall, pod feature.Pod) (executor.Step, bool, error) {
	ws, st, ok, err := f.Claims.For(ctx, call)
	if !ok || ws == nil {
		return st, ok, err
	}
	*pod.Spec = podspec.WithWorkspace(*pod.Spec, ws)
	for _, labels := range pod.Labels {
		labels[podcontract.LabelWorkspaceClaim] = ws.ClaimName
	}
	return executor.Step{}, true, nil
}

// ClassifyEnding ends an attempt that never ran because its claim never bound
// WorkspaceUnbound (Claims.Unbound).
func (f Feature) ClassifyEnding(ctx context.Context, call *v1alpha1.ToolCall, o pipeline.Outcome) (executor.Step, bool) {
	return f.Claims.Unbound(ctx, call, o)
}

// SessionSafe decides for every workspace tool (SessionSafe, the function).
func (Feature) SessionSafe(spec *v1alpha1.ToolSpec) (safe, decided bool) {
	return SessionSafe(spec), true
}
