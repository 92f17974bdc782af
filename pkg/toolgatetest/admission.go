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
*/

package toolgatetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/config/admission"
)

// probeUser is a requester and approver no client authenticates as.
const probeUser = "toolgatetest:nobody"

// probeUID is the callUID of the probe approval (it answers no call).
const probeUID = "00000000-0000-4000-8000-000000000000"

// waitForIdentityPolicy polls, with server-side dry-run creates as the admin, until the
// admission policies are in effect: the stamp policies replace a ToolCall's requester and a
// ToolCallApproval's approver that name another user, and the identity policy refuses an
// approval whose ownerReference names another call (a rule no mutation touches). A new
// policy and binding take effect only after the apiserver's policy informers have seen
// both, usually within a second.
func (e *Env) waitForIdentityPolicy(ctx context.Context) error {
	call := MakeToolCall("toolgatetest-probe", metav1.NamespaceDefault).Requester(probeUser).Obj()
	approval := MakeToolCallApproval("toolgatetest-probe", metav1.NamespaceDefault).Approver(probeUser).CallUID(probeUID).Obj()
	owned := approval.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "toolgate.dev/v1alpha1", Kind: "ToolCall",
		Name: "toolgatetest-other", UID: probeUID}}
	probes := []struct {
		name string
		obj  client.Object
		done func(client.Object, error) bool
	}{
		{admission.RequesterPolicyName, call, func(o client.Object, err error) bool {
			return err == nil && o.(*toolgatev1alpha1.ToolCall).Spec.Requester != probeUser
		}},
		{admission.ApproverPolicyName, approval, func(o client.Object, err error) bool {
			return err == nil && o.(*toolgatev1alpha1.ToolCallApproval).Spec.Approver != probeUser
		}},
		{admission.IdentityPolicyName, owned, func(_ client.Object, err error) bool {
			return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "'"+admission.IdentityPolicyName+"'")
		}},
	}
	for _, p := range probes {
		var last error
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			obj := p.obj.DeepCopyObject().(client.Object)
			last = e.Client.Create(ctx, obj, client.DryRunAll)
			return p.done(obj, last), nil
		})
		if err != nil {
			if last == nil {
				last = errors.New("the dry-run create was admitted unchanged")
			}
			return fmt.Errorf("admission policy %s not in effect: %w", p.name, last)
		}
	}
	return nil
}

// IsIdentityPolicyDenial reports whether err is the toolgate-identity policy's refusal.
func IsIdentityPolicyDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "'"+admission.IdentityPolicyName+"'")
}
