package registration

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/controllers/internal/events"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// registrar is the one reconciler behind ToolReconciler and ClusterToolReconciler: it
// registers the tools of one kind — the resolved name, the spec digest, schema and
// presentation checks, and loud duplicate detection (the oldest keeps the name) — and
// leaves what differs between the kinds to its toolKind.
type registrar[T client.Object] struct {
	client.Client
	recorder recorder.EventRecorder
	compiler *pipeline.Compiler
	kind     toolKind[T]
}

// toolKind is what the registrar needs to know of one tool kind.
type toolKind[T client.Object] struct {
	// controller names the controller ("tool", "clustertool").
	controller string
	object     func() T
	spec       func(T) *v1alpha1.ToolSpec
	status     func(T) *v1alpha1.ToolStatus
	// namesakes lists the tools of the kind that may hold t's resolved name (t among them).
	namesakes func(ctx context.Context, c client.Reader, t T) ([]T, error)
	// registration is t as the resolver sees it; index builds the kind's layer of them.
	registration func(T) pipeline.Registration
	index        func([]pipeline.Registration) *pipeline.Index
	// refusal is a reason of the kind's own to refuse t, checked after duplicates and
	// before the spec (a Tool's scope must exist); nil: none.
	refusal func(ctx context.Context, c client.Reader, t T) *metav1.Condition
	// watches adds the kind's own watches (a Tool's ToolScope) to the namesakes'.
	watches func(b *builder.Builder, c client.Reader) *builder.Builder
}

// Reconcile registers one tool.
func (r *registrar[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tool := r.kind.object()
	if err := r.Get(ctx, req.NamespacedName, tool); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	peers, err := r.kind.namesakes(ctx, r.Client, tool)
	if err != nil {
		return ctrl.Result{}, err
	}
	var regs []pipeline.Registration
	for _, p := range peers {
		if p.GetDeletionTimestamp().IsZero() {
			regs = append(regs, r.kind.registration(p))
		}
	}
	cond := r.registration(ctx, tool, duplicateOf(r.kind.index(regs), r.kind.registration(tool).Key))
	current := r.kind.status(tool)
	status := registeredStatus(r.kind.spec(tool), tool.GetName(), tool.GetGeneration(), current.Conditions, cond)
	return ctrl.Result{}, writeToolStatus(ctx, r.Client, r.recorder, tool, current, status)
}

// registration decides the Registered condition: a duplicate loses its name first, then
// the kind's own refusal, then what the spec alone shows.
func (r *registrar[T]) registration(ctx context.Context, tool T, winner string) metav1.Condition {
	if winner != "" {
		return duplicateCondition(winner)
	}
	if r.kind.refusal != nil {
		if cond := r.kind.refusal(ctx, r.Client, tool); cond != nil {
			return *cond
		}
	}
	return specCondition(r.compiler, r.kind.spec(tool))
}

// setup watches the kind and re-registers a tool when a namesake changes (the newer
// duplicate takes over when the older one is deleted).
func (r *registrar[T]) setup(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(r.kind.object()).
		Watches(r.kind.object(), handler.EnqueueRequestsFromMapFunc(r.namesakeRequests))
	if r.kind.watches != nil {
		b = r.kind.watches(b, r.Client)
	}
	return b.Named(r.kind.controller).Complete(r)
}

func (r *registrar[T]) namesakeRequests(ctx context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(T)
	if !ok {
		return nil
	}
	peers, err := r.kind.namesakes(ctx, r.Client, t)
	if err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(peers))
	for _, p := range peers {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)})
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
	for what, raw := range map[string][]byte{"parameters": RawOf(spec.Parameters), "output": RawOf(spec.Output)} {
		if _, err := CompileSchema(c, raw); err != nil {
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
	bounds.SetStatusCondition(&out.Conditions, cond)
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
		events.Emit(rec, obj, corev1.EventTypeWarning, cond.Reason, "Register", cond.Message)
	}
	return nil
}

func equalToolStatus(a, b *v1alpha1.ToolStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.SpecDigest != b.SpecDigest || a.ResolvedName != b.ResolvedName {
		return false
	}
	return conditionsEqual(a.Conditions, b.Conditions)
}
