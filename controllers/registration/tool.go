package registration

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// ToolReconciler registers namespaced Tools: the resolved name, the spec digest, schema
// checks, the scope's existence, and loud duplicate detection (the oldest keeps the name).
// It is the registrar (registrar.go) with the Tool kind.
type ToolReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	Compiler *pipeline.Compiler
}

// +kubebuilder:rbac:groups=toolgate.dev,resources=tools;clustertools,verbs=get;list;watch
// +kubebuilder:rbac:groups=toolgate.dev,resources=tools/status;clustertools/status,verbs=get;update;patch

// Reconcile registers one Tool.
func (r *ToolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.registrar().Reconcile(ctx, req)
}

// SetupWithManager watches Tools, and re-registers a Tool when a peer with the same name
// or its scope changes (the newer duplicate takes over when the older one is deleted).
func (r *ToolReconciler) SetupWithManager(mgr ctrl.Manager) error { return r.registrar().setup(mgr) }

func (r *ToolReconciler) registrar() *registrar[*v1alpha1.Tool] {
	return &registrar[*v1alpha1.Tool]{Client: r.Client, recorder: r.Recorder, compiler: r.Compiler, kind: toolKindTool}
}

// toolKindTool is the namespace layer: namesakes share a namespace (found through the
// resolved-name index), and a Tool's scope must exist.
var toolKindTool = toolKind[*v1alpha1.Tool]{
	controller:   "tool",
	object:       func() *v1alpha1.Tool { return &v1alpha1.Tool{} },
	spec:         func(t *v1alpha1.Tool) *v1alpha1.ToolSpec { return &t.Spec.ToolSpec },
	status:       func(t *v1alpha1.Tool) *v1alpha1.ToolStatus { return &t.Status },
	registration: catalog.ToolRegistration,
	index:        func(regs []pipeline.Registration) *pipeline.Index { return pipeline.NewIndex(nil, regs, nil) },
	namesakes: func(ctx context.Context, c client.Reader, t *v1alpha1.Tool) ([]*v1alpha1.Tool, error) {
		return listTools(ctx, c, t.Namespace, func(*v1alpha1.Tool) bool { return true },
			client.MatchingFields{IndexToolName: catalog.ToolName(&t.Spec.ToolSpec, t.Name)})
	},
	refusal: func(ctx context.Context, c client.Reader, t *v1alpha1.Tool) *metav1.Condition {
		if t.Spec.Scope == "" {
			return nil
		}
		scope := &v1alpha1.ToolScope{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: t.Namespace, Name: t.Spec.Scope}, scope); apierrors.IsNotFound(err) {
			return &metav1.Condition{Type: v1alpha1.ConditionRegistered, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonUnknownScope, Message: "ToolScope " + t.Spec.Scope + " does not exist"}
		}
		return nil
	},
	watches: func(b *builder.Builder, c client.Reader) *builder.Builder {
		return b.Watches(&v1alpha1.ToolScope{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			tools, err := listTools(ctx, c, o.GetNamespace(), func(t *v1alpha1.Tool) bool { return t.Spec.Scope == o.GetName() })
			if err != nil {
				return nil
			}
			reqs := make([]reconcile.Request, 0, len(tools))
			for _, t := range tools {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(t)})
			}
			return reqs
		}))
	},
}

// listTools lists the Tools of ns that match.
func listTools(ctx context.Context, c client.Reader, ns string, match func(*v1alpha1.Tool) bool, opts ...client.ListOption) ([]*v1alpha1.Tool, error) {
	tools := &v1alpha1.ToolList{}
	if err := c.List(ctx, tools, append([]client.ListOption{client.InNamespace(ns)}, opts...)...); err != nil {
		return nil, err
	}
	var out []*v1alpha1.Tool
	for i := range tools.Items {
		if match(&tools.Items[i]) {
			out = append(out, &tools.Items[i])
		}
	}
	return out, nil
}
