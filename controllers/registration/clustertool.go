package registration

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// ClusterToolReconciler registers ClusterTools, the global layer. It is the registrar
// (registrar.go) with the ClusterTool kind.
type ClusterToolReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	Compiler *pipeline.Compiler
}

// Reconcile registers one ClusterTool.
func (r *ClusterToolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.registrar().Reconcile(ctx, req)
}

// SetupWithManager watches ClusterTools and re-registers namesakes on any change.
func (r *ClusterToolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return r.registrar().setup(mgr)
}

func (r *ClusterToolReconciler) registrar() *registrar[*v1alpha1.ClusterTool] {
	return &registrar[*v1alpha1.ClusterTool]{Client: r.Client, recorder: r.Recorder, compiler: r.Compiler, kind: toolKindClusterTool}
}

// toolKindClusterTool is the global layer: namesakes are every ClusterTool resolving to
// the same name; there is no scope to check.
var toolKindClusterTool = toolKind[*v1alpha1.ClusterTool]{
	controller:   "clustertool",
	object:       func() *v1alpha1.ClusterTool { return &v1alpha1.ClusterTool{} },
	spec:         func(t *v1alpha1.ClusterTool) *v1alpha1.ToolSpec { return &t.Spec },
	status:       func(t *v1alpha1.ClusterTool) *v1alpha1.ToolStatus { return &t.Status },
	registration: catalog.ClusterToolRegistration,
	index:        func(regs []pipeline.Registration) *pipeline.Index { return pipeline.NewIndex(regs, nil, nil) },
	namesakes: func(ctx context.Context, c client.Reader, t *v1alpha1.ClusterTool) ([]*v1alpha1.ClusterTool, error) {
		tools := &v1alpha1.ClusterToolList{}
		if err := c.List(ctx, tools); err != nil {
			return nil, err
		}
		name := catalog.ToolName(&t.Spec, t.Name)
		var out []*v1alpha1.ClusterTool
		for i := range tools.Items {
			if catalog.ToolName(&tools.Items[i].Spec, tools.Items[i].Name) == name {
				out = append(out, &tools.Items[i])
			}
		}
		return out, nil
	},
}
