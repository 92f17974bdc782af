package toolcall

import (
	"github.com/toolgate/toolgate/controllers/netisolation"
)

// enforcer is the reconciler's network isolation check (netisolation.Enforcer), built on
// first use from its clients and options; in ensure mode it also ensures the policies
// features add (feature.NetworkPolicies), which may allow tool Pods egress.
func (r *Reconciler) enforcer() *netisolation.Enforcer {
	r.isolationOnce.Do(func() {
		features := r.features()
		r.isolation = &netisolation.Enforcer{Client: r.Client, APIReader: r.APIReader, Options: r.Options.NetworkPolicy,
			Extra: features.Policies, ExtraNames: features.PolicyNames()}
	})
	return r.isolation
}
