package netisolation

import (
	"context"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/internal/coalesce"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;create;update

// Enforcer makes sure, before a tool body may start, that its Pod is isolated as its
// tool's sandbox.network requires. Its live reads of a namespace's policies are shared by
// the calls of the namespace that ask at the same time (coalesce.Coalescer). The zero
// value is not usable: set Client, APIReader and Options.
type Enforcer struct {
	// Client writes toolgate's policies (ensure mode).
	Client client.Client
	// APIReader lists a namespace's policies live, around the cache.
	APIReader client.Reader
	// Options are the mode and the egress-only policy's excepted ranges.
	Options Options
	// Extra are more policies toolgate ensures in a namespace in ensure mode, after its two
	// (the features', feature.NetworkPolicies); nil: none.
	Extra func(namespace string) []*networkingv1.NetworkPolicy
	// ExtraNames names the policies besides EgressOnlyPolicyName that toolgate ensures
	// with egress rules (the features', feature.NetworkPolicies): in ensure mode only these may allow a tool
	// Pod egress.
	ExtraNames []string

	reads coalesce.Coalescer[policiesRead]
}

// Ensure runs before a tool's Pod is made or handed its arguments: in ensure mode it
// creates or repairs toolgate's NetworkPolicies in the call's namespace; in ensure and
// require mode it then checks, from a live read, that a Pod with podLabels is isolated as
// its tool's sandbox.network requires. It returns why not (non-empty: the call must not
// run); an error for a failure worth retrying. The read (and the ensuring) is shared with
// the calls of the namespace that asked at the same time, as admission's.
func (e *Enforcer) Ensure(ctx context.Context, call *v1alpha1.ToolCall, podLabels map[string]string) (string, error) {
	opts := e.Options
	if opts.Mode == Off || opts.Mode == "" {
		return "", nil
	}
	wait, ok := ctx.Value(readKey{}).(func(context.Context) (policiesRead, error))
	if !ok {
		wait = e.join(call.Namespace)
	}
	got, err := wait(ctx)
	if err != nil || got.refusal != "" {
		return got.refusal, err
	}
	network := call.Status.Tool.Spec.Sandbox.Network
	if network == "" {
		network = v1alpha1.NetworkNone
	}
	var owned []string
	if opts.Mode == Ensure {
		owned = append([]string{EgressOnlyPolicyName}, e.ExtraNames...)
	}
	return Gap(network, podLabels, got.policies, owned), nil
}

// unisolatedMessage is what the model reads when its tool's Pod could not be isolated.
const unisolatedMessage = "the call was not run: the network isolation its tool requires is missing in this namespace"

// Refuse is the step that ends a call whose Pod the namespace's policies do not isolate as
// its tool requires (why, from Ensure, for people), before anything of the attempt runs.
func Refuse(why string) executor.Step {
	return executor.Refuse(executor.Refusal{Reason: v1alpha1.ReasonNetworkIsolationMissing, Message: unisolatedMessage, Detail: why})
}

// readKey keys, in a reconcile pass's context, the isolation read joined early
// (WithRead), so that the check before the Pod waits for a read already under way
// instead of starting one after the admission status write.
type readKey struct{}

// WithRead joins the namespace's next isolation read now (in ensure or require mode) and
// carries its answer in the returned context for Ensure. The read still starts after the
// reconciler saw the call, so a NetworkPolicy created before the call is in it; it only
// runs alongside admission's reads instead of after them.
func (e *Enforcer) WithRead(ctx context.Context, namespace string) context.Context {
	if m := e.Options.Mode; m == Off || m == "" {
		return ctx
	}
	return context.WithValue(ctx, readKey{}, e.join(namespace))
}

func (e *Enforcer) join(namespace string) func(context.Context) (policiesRead, error) {
	return e.reads.Join(namespace, func(ctx context.Context) (policiesRead, error) {
		return e.read(ctx, namespace)
	})
}

// policiesRead is a namespace's NetworkPolicies read live (in ensure mode after toolgate's own
// were created or repaired), or why no call of the namespace can be isolated now. It is
// shared by the calls that asked for it: read only.
type policiesRead struct {
	policies []networkingv1.NetworkPolicy
	refusal  string
}

// read lists the namespace's NetworkPolicies and, in ensure mode, ensures toolgate's.
func (e *Enforcer) read(ctx context.Context, namespace string) (policiesRead, error) {
	opts := e.Options
	list := &networkingv1.NetworkPolicyList{}
	if err := e.APIReader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		if apierrors.IsForbidden(err) {
			return policiesRead{refusal: "the operator may not read NetworkPolicies in namespace " + namespace + ": " + err.Error()}, nil
		}
		return policiesRead{}, err
	}
	if opts.Mode == Ensure {
		want := ToolNetworkPolicies(namespace, opts.EgressExcept)
		if e.Extra != nil {
			want = append(want, e.Extra(namespace)...)
		}
		for _, p := range want {
			if msg, err := e.ensurePolicy(ctx, list, p); msg != "" || err != nil {
				return policiesRead{refusal: msg}, err
			}
		}
	}
	return policiesRead{policies: list.Items}, nil
}

// ensurePolicy creates want, or puts its spec back on a policy of that name whose spec
// differs, and records the result in list.
func (e *Enforcer) ensurePolicy(ctx context.Context, list *networkingv1.NetworkPolicyList, want *networkingv1.NetworkPolicy) (string, error) {
	var err error
	i := indexOfPolicy(list.Items, want.Name)
	switch {
	case i < 0:
		want.Labels = map[string]string{podcontract.LabelManagedBy: podcontract.ManagedByValue}
		if err = e.Client.Create(ctx, want); err == nil {
			list.Items = append(list.Items, *want)
			ctrl.LoggerFrom(ctx).Info("created NetworkPolicy", "networkPolicy", want.Name)
		}
	case !equality.Semantic.DeepEqual(list.Items[i].Spec, want.Spec):
		have := list.Items[i].DeepCopy()
		have.Spec = want.Spec
		if err = e.Client.Update(ctx, have); err == nil {
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
