package toolcall

import (
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/toolgate/toolgate/controllers/netisolation"
)

// enforcer is the reconciler's network isolation check (netisolation.Enforcer), built on
// first use from its clients and options; in ensure mode it also ensures the policies
// features add (feature.NetworkPolicies), which may allow tool Pods egress, and the
// session Pods' ingress from the operator (netisolation.SessionIngressPolicy).
func (r *Reconciler) enforcer() *netisolation.Enforcer {
	r.isolationOnce.Do(func() {
		features := r.features()
		sess := r.Options.Session
		extra := func(ns string) []*networkingv1.NetworkPolicy {
			return append(features.Policies(ns), netisolation.SessionIngressPolicy(ns, sess.OperatorNamespace, sess.OperatorLabels))
		}
		r.isolation = &netisolation.Enforcer{Client: r.Client, APIReader: r.APIReader, Options: r.Options.NetworkPolicy,
			Extra: extra, ExtraNames: append(features.PolicyNames(), netisolation.SessionIngressPolicyName)}
	})
	return r.isolation
}
