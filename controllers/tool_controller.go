package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
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
type ToolReconciler struct {
	client.Client
	Recorder recorder.EventRecorder
	Compiler *pipeline.Compiler
}

// +kubebuilder:rbac:groups=toolgate.dev,resources=tools;clustertools,verbs=get;list;watch
// +kubebuilder:rbac:groups=toolgate.dev,resources=tools/status;clustertools/status,verbs=get;update;patch

// Reconcile registers one Tool.
func (r *ToolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tool := &v1alpha1.Tool{}
	if err := r.Get(ctx, req.NamespacedName, tool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Only namesakes can hold this Tool's name: the duplicate check reads those alone.
	peers := &v1alpha1.ToolList{}
	if err := r.List(ctx, peers, client.InNamespace(tool.Namespace),
		client.MatchingFields{indexToolName: catalog.ToolName(&tool.Spec.ToolSpec, tool.Name)}); err != nil {
		return ctrl.Result{}, err
	}
	var regs []pipeline.Registration
	for i := range peers.Items {
		if peers.Items[i].DeletionTimestamp.IsZero() {
			regs = append(regs, catalog.ToolRegistration(&peers.Items[i]))
		}
	}
	cond := r.registration(ctx, tool, duplicateOf(pipeline.NewIndex(nil, regs, nil), catalog.ToolRegistration(tool).Key))
	status := registeredStatus(&tool.Spec.ToolSpec, tool.Name, tool.Generation, tool.Status.Conditions, cond)
	return ctrl.Result{}, writeToolStatus(ctx, r.Client, r.Recorder, tool, &tool.Status, status)
}

// registration decides the Registered condition of a Tool.
func (r *ToolReconciler) registration(ctx context.Context, tool *v1alpha1.Tool, winner string) metav1.Condition {
	if winner != "" {
		return duplicateCondition(winner)
	}
	if tool.Spec.Scope != "" {
		scope := &v1alpha1.ToolScope{}
		if err := r.Get(ctx, types.NamespacedName{Namespace: tool.Namespace, Name: tool.Spec.Scope}, scope); apierrors.IsNotFound(err) {
			return metav1.Condition{Type: v1alpha1.ConditionRegistered, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonUnknownScope, Message: "ToolScope " + tool.Spec.Scope + " does not exist"}
		}
	}
	return specCondition(r.Compiler, &tool.Spec.ToolSpec)
}

// SetupWithManager watches Tools, and re-registers a Tool when a peer with the same name
// or its scope changes (the newer duplicate takes over when the older one is deleted).
func (r *ToolReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Tool{}).
		Watches(&v1alpha1.Tool{}, handler.EnqueueRequestsFromMapFunc(r.namesakes)).
		Watches(&v1alpha1.ToolScope{}, handler.EnqueueRequestsFromMapFunc(r.scopeTools)).
		Named("tool").
		Complete(r)
}

func (r *ToolReconciler) namesakes(ctx context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(*v1alpha1.Tool)
	if !ok {
		return nil
	}
	return r.toolRequests(ctx, t.Namespace, func(*v1alpha1.Tool) bool { return true },
		client.MatchingFields{indexToolName: catalog.ToolName(&t.Spec.ToolSpec, t.Name)})
}

func (r *ToolReconciler) scopeTools(ctx context.Context, o client.Object) []reconcile.Request {
	return r.toolRequests(ctx, o.GetNamespace(), func(p *v1alpha1.Tool) bool { return p.Spec.Scope == o.GetName() })
}

func (r *ToolReconciler) toolRequests(ctx context.Context, ns string, match func(*v1alpha1.Tool) bool, opts ...client.ListOption) []reconcile.Request {
	tools := &v1alpha1.ToolList{}
	if err := r.List(ctx, tools, append([]client.ListOption{client.InNamespace(ns)}, opts...)...); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range tools.Items {
		if match(&tools.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&tools.Items[i])})
		}
	}
	return reqs
}

// duplicateOf returns the key of the registration that holds key's name, when key lost it.
func duplicateOf(idx *pipeline.Index, key string) string {
	for _, d := range idx.Duplicates() {
		if d.Registration.Key == key {
			return d.WinnerKey
		}
	}
	return ""
}

func duplicateCondition(winnerKey string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionRegistered, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonDuplicateName, Message: "an older registration holds this name in this scope: " + winnerKey}
}

// specCondition checks what can be checked of a spec alone: its schemas and expressions.
func specCondition(c *pipeline.Compiler, spec *v1alpha1.ToolSpec) metav1.Condition {
	for what, raw := range map[string][]byte{"parameters": rawOf(spec.Parameters), "output": rawOf(spec.Output)} {
		if _, err := compileSchema(c, raw); err != nil {
			return metav1.Condition{Type: v1alpha1.ConditionRegistered, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonSchemaInvalid, Message: what + ": " + err.Error()}
		}
	}
	if p := spec.Presentation; p != nil {
		if err := c.CheckPresentation(p.Call, p.Result); err != nil {
			return metav1.Condition{Type: v1alpha1.ConditionRegistered, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonPresentationInvalid, Message: err.Error()}
		}
	}
	return metav1.Condition{Type: v1alpha1.ConditionRegistered, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonRegistered, Message: "the tool is registered"}
}

// registeredStatus is the desired ToolStatus.
func registeredStatus(spec *v1alpha1.ToolSpec, objName string, generation int64, conds []metav1.Condition, cond metav1.Condition) v1alpha1.ToolStatus {
	out := v1alpha1.ToolStatus{
		ObservedGeneration: generation,
		Conditions:         append([]metav1.Condition(nil), conds...),
		SpecDigest:         catalog.SpecDigest(spec),
		ResolvedName:       catalog.ToolName(spec, objName),
	}
	cond.ObservedGeneration = generation
	setStatusCondition(&out.Conditions, cond)
	return out
}

// writeToolStatus writes a Tool or ClusterTool status when it changed, then warns loudly
// about a registration that failed.
func writeToolStatus(ctx context.Context, c client.Client, rec recorder.EventRecorder, obj client.Object, current *v1alpha1.ToolStatus, desired v1alpha1.ToolStatus) error {
	if equalToolStatus(current, &desired) {
		return nil
	}
	*current = desired
	if err := c.Status().Update(ctx, obj); err != nil {
		// A conflict means a newer version is on its way to the cache: its event reconciles again.
		if apierrors.IsConflict(err) {
			return nil
		}
		return client.IgnoreNotFound(err)
	}
	cond := meta.FindStatusCondition(desired.Conditions, v1alpha1.ConditionRegistered)
	if cond != nil && cond.Status == metav1.ConditionFalse {
		emit(rec, obj, corev1.EventTypeWarning, cond.Reason, "Register", cond.Message)
	}
	return nil
}

func equalToolStatus(a, b *v1alpha1.ToolStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.SpecDigest != b.SpecDigest || a.ResolvedName != b.ResolvedName {
		return false
	}
	return conditionsEqual(a.Conditions, b.Conditions)
}
