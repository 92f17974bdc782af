/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/package toolgatetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RefusalWrapper builds a ValidatingAdmissionPolicy and its binding that refuse every
// create of one resource — as a cluster's own policy, a quota or a security profile would —
// so that a spec can see what toolgate does when Kubernetes says no to its Job or Pod.
type RefusalWrapper struct {
	policy  admissionregistrationv1.ValidatingAdmissionPolicy
	binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// MakeRefusal refuses, with message, every create of resource (plural, e.g. "jobs") in API
// group (core: "") version v1, in every namespace; the policy and binding are both named
// name (cluster-scoped).
func MakeRefusal(name, group, resource, message string) *RefusalWrapper {
	w := &RefusalWrapper{}
	w.policy.Name, w.binding.Name = name, name
	w.policy.Spec = admissionregistrationv1.ValidatingAdmissionPolicySpec{
		FailurePolicy: ptr.To(admissionregistrationv1.Fail),
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}},
			},
		}}},
		Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message}},
	}
	w.binding.Spec = admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
		PolicyName:        name,
		ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
	}
	return w
}

// Reason is the status reason of the refusal (metav1.StatusReasonInvalid is the API
// server's default; Forbidden makes it look like an authorization failure).
func (w *RefusalWrapper) Reason(r metav1.StatusReason) *RefusalWrapper {
	w.policy.Spec.Validations[0].Reason = &r
	return w
}

// InNamespace limits the refusal to the namespace ns.
func (w *RefusalWrapper) InNamespace(ns string) *RefusalWrapper {
	w.matchResources().NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
	return w
}

// ObjectLabels limits the refusal to objects with these labels.
func (w *RefusalWrapper) ObjectLabels(labels map[string]string) *RefusalWrapper {
	w.matchResources().ObjectSelector = &metav1.LabelSelector{MatchLabels: labels}
	return w
}

// Labels labels the policy and the binding (a suite's clean-up selector).
func (w *RefusalWrapper) Labels(labels map[string]string) *RefusalWrapper {
	w.policy.Labels, w.binding.Labels = labels, labels
	return w
}

func (w *RefusalWrapper) matchResources() *admissionregistrationv1.MatchResources {
	if w.binding.Spec.MatchResources == nil {
		w.binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{}
	}
	return w.binding.Spec.MatchResources
}

// Objs returns copies of the policy and its binding, policy first.
func (w *RefusalWrapper) Objs() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	return w.policy.DeepCopy(), w.binding.DeepCopy()
}

// refusalTimeout bounds how long Apply waits for a new policy to reach admission.
const refusalTimeout = 30 * time.Second

// Apply creates the policy and its binding with c and waits (up to 30 s) until the API
// server refuses a server-side dry-run create of probe, an object the refusal matches, with
// the refusal's message: a new policy takes a moment to reach admission. remove deletes
// both (those already gone are no error); on error nothing is left behind.
func (w *RefusalWrapper) Apply(ctx context.Context, c client.Client, probe client.Object) (remove func(context.Context) error, err error) {
	policy, binding := w.Objs()
	remove = func(ctx context.Context) error {
		return errors.Join(client.IgnoreNotFound(c.Delete(ctx, binding)), client.IgnoreNotFound(c.Delete(ctx, policy)))
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := c.Create(ctx, obj); err != nil {
			return nil, errors.Join(fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err), remove(context.WithoutCancel(ctx)))
		}
	}
	message := w.policy.Spec.Validations[0].Message
	var last error
	err = wait.PollUntilContextTimeout(ctx, Interval, refusalTimeout, true, func(ctx context.Context) (bool, error) {
		last = c.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), message), nil
	})
	if err != nil {
		if last == nil {
			last = errors.New("the probe was admitted")
		}
		return nil, errors.Join(fmt.Errorf("refusal %s not in effect: %w", w.policy.Name, last), remove(context.WithoutCancel(ctx)))
	}
	return remove, nil
}
