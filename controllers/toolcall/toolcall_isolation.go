package toolcall

import (
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/toolgate/toolgate/controllers/egressgrant"
	"github.com/toolgate/toolgate/controllers/netisolation"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// enforcer is the reconciler's network isolation check (netisolation.Enforcer), built on
// first use from its clients and options; in ensure mode it also ensures the egress
// proxy's policy, which may allow tool Pods egress.
func (r *Reconciler) enforcer() *netisolation.Enforcer {
	r.isolationOnce.Do(func() {
		proxy := r.Options.EgressProxy
		r.isolation = &netisolation.Enforcer{Client: r.Client, APIReader: r.APIReader, Options: r.Options.NetworkPolicy,
			Extra: func(namespace string) []*networkingv1.NetworkPolicy {
				return egressgrant.ProxyPolicies(namespace, proxy, netisolation.ToolPodSelector(podcontract.NetworkProxy))
			},
			ExtraEgress: []string{egressgrant.ProxyPolicyName}}
	})
	return r.isolation
}
