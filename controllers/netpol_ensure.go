package controllers

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;create;update

// ensureIsolation runs before a tool Job is created: in ensure mode it creates or repairs
// toolgate's two NetworkPolicies in the call's namespace; in ensure and require mode it
// then checks, from a live read, that the Pod the Job makes is isolated as its tool's
// sandbox.network requires. It returns a non-empty refusal when the call must not run;
// an error for a failure worth retrying. The read (and the ensuring) is shared with the
// calls of the namespace that asked at the same time, as admission's (coalesce.go).
func (r *ToolCallReconciler) ensureIsolation(ctx context.Context, call *v1alpha1.ToolCall, podLabels map[string]string) (string, error) {
	opts := r.Options.NetworkPolicy
	if opts.Mode == NetworkPolicyOff || opts.Mode == "" {
		return "", nil
	}
	wait, ok := ctx.Value(isolationKey{}).(func(context.Context) (isolationRead, error))
	if !ok {
		wait = r.joinIsolation(call.Namespace)
	}
	read, err := wait(ctx)
	if err != nil || read.refusal != "" {
		return read.refusal, err
	}
	network := call.Status.Tool.Spec.Sandbox.Network
	if network == "" {
		network = v1alpha1.NetworkNone
	}
	return isolationGap(network, podLabels, read.policies, opts.Mode == NetworkPolicyEnsure), nil
}

// isolationKey keys, in a reconcile pass's context, the isolation read admission joined
// early (withIsolationRead), so that the check before the Job waits for a read already
// under way instead of starting one after the admission status write.
type isolationKey struct{}

// withIsolationRead joins the namespace's next isolation read now (in NetworkPolicy
// ensure or require mode) and carries its answer in the returned context for
// ensureIsolation. The read still starts after the reconciler saw the call, so a
// NetworkPolicy created before the call is in it; it only runs alongside admission's
// reads instead of after them.
func (r *ToolCallReconciler) withIsolationRead(ctx context.Context, namespace string) context.Context {
	if m := r.Options.NetworkPolicy.Mode; m == NetworkPolicyOff || m == "" {
		return ctx
	}
	return context.WithValue(ctx, isolationKey{}, r.joinIsolation(namespace))
}

func (r *ToolCallReconciler) joinIsolation(namespace string) func(context.Context) (isolationRead, error) {
	return r.isolation.Join(namespace, func(ctx context.Context) (isolationRead, error) {
		return r.readIsolation(ctx, namespace)
	})
}

// isolationRead is a namespace's NetworkPolicies read live (in ensure mode after toolgate's
// own were created or repaired), or why no call of the namespace can be isolated now.
// It is shared by the calls that asked for it: read only.
type isolationRead struct {
	policies []networkingv1.NetworkPolicy
	refusal  string
}

// readIsolation lists the namespace's NetworkPolicies and, in ensure mode, ensures toolgate's.
func (r *ToolCallReconciler) readIsolation(ctx context.Context, namespace string) (isolationRead, error) {
	opts := r.Options.NetworkPolicy
	list := &networkingv1.NetworkPolicyList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if apierrors.IsForbidden(err) {
			return isolationRead{refusal: "the operator may not read NetworkPolicies in namespace " + namespace + ": " + err.Error()}, nil
		}
		return isolationRead{}, err
	}
	if opts.Mode == NetworkPolicyEnsure {
		for _, want := range append(ToolNetworkPolicies(namespace, opts.EgressExcept), EgressProxyPolicies(namespace, r.Options.EgressProxy)...) {
			if msg, err := r.ensurePolicy(ctx, list, want); msg != "" || err != nil {
				return isolationRead{refusal: msg}, err
			}
		}
	}
	return isolationRead{policies: list.Items}, nil
}

// ensurePolicy creates want, or puts its spec back on a policy of that name whose spec
// differs, and records the result in list.
func (r *ToolCallReconciler) ensurePolicy(ctx context.Context, list *networkingv1.NetworkPolicyList, want *networkingv1.NetworkPolicy) (string, error) {
	var err error
	i := indexOfPolicy(list.Items, want.Name)
	switch {
	case i < 0:
		want.Labels = map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue}
		if err = r.Create(ctx, want); err == nil {
			list.Items = append(list.Items, *want)
			ctrl.LoggerFrom(ctx).Info("created NetworkPolicy", "networkPolicy", want.Name)
		}
	case !equality.Semantic.DeepEqual(list.Items[i].Spec, want.Spec):
		have := list.Items[i].DeepCopy()
		have.Spec = want.Spec
		if err = r.Update(ctx, have); err == nil {
			list.Items[i] = *have
			ctrl.LoggerFrom(ctx).Info("repaired NetworkPolicy", "networkPolicy", want.Name)
		}
	}
	switch {
	case err == nil:
		return "", nil
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return fmt.Sprintf("NetworkPolicy %s could not be written: %v", want.Name, err), nil
	default: // a conflict, a create race, a transient error: the next pass reads again
		return "", err
	}
}

func indexOfPolicy(items []networkingv1.NetworkPolicy, name string) int {
	for i := range items {
		if items[i].Name == name {
			return i
		}
	}
	return -1
}
