package registration

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// MaxScopeChain bounds a walk up a scope chain: the ToolScope reconciler refuses a cycle,
// and the bound stops one written since.
const MaxScopeChain = 32

// NearestScope is the nearest scope of namespace's chain from scope (scope itself first)
// for which has is true; nil when none is, when the chain reaches the namespace layer ("")
// or a scope that does not exist.
func NearestScope(ctx context.Context, c client.Reader, namespace, scope string, has func(*v1alpha1.ToolScope) bool) (*v1alpha1.ToolScope, error) {
	var found *v1alpha1.ToolScope
	err := walkScopes(ctx, c, namespace, scope, func(sc *v1alpha1.ToolScope) bool {
		if has(sc) {
			found = sc
		}
		return found != nil
	})
	return found, client.IgnoreNotFound(err)
}

// ScopeChain is namespace's chain from scope, nearest first; a scope that cannot be read
// (NotFound included) is an error.
func ScopeChain(ctx context.Context, c client.Reader, namespace, scope string) ([]*v1alpha1.ToolScope, error) {
	var chain []*v1alpha1.ToolScope
	err := walkScopes(ctx, c, namespace, scope, func(sc *v1alpha1.ToolScope) bool {
		chain = append(chain, sc)
		return false
	})
	if err != nil {
		return nil, err
	}
	return chain, nil
}

// walkScopes reads the chain from scope up, calling visit with each scope until it returns
// true or the chain ends.
func walkScopes(ctx context.Context, c client.Reader, namespace, scope string, visit func(*v1alpha1.ToolScope) bool) error {
	name := scope
	for range MaxScopeChain {
		if name == "" {
			return nil
		}
		sc := &v1alpha1.ToolScope{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, sc); err != nil {
			return err
		}
		if visit(sc) {
			return nil
		}
		name = sc.Spec.Parent
	}
	return nil
}
