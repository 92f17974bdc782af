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

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
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
	// Last: the probes above have seen the CRDs served.
	if err := e.waitForCancelPolicy(ctx); err != nil {
		return err
	}
	return e.waitForCredentialPolicy(ctx)
}

// credentialProbeUser is an EditorsGroup member (may create Tools) who may get no Secret.
const credentialProbeUser = "toolgatetest:tool-editor"

// waitForCredentialPolicy polls, with dry-run creates as credentialProbeUser of a Tool
// naming a Secret, until the toolgate-credentials policy refuses them.
func (e *Env) waitForCredentialPolicy(ctx context.Context) error {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: credentialProbeUser, Groups: []string{EditorsGroup}}
	as, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return err
	}
	tool := MakeTool("toolgatetest-credential-probe", metav1.NamespaceDefault).SecretEnv("TOKEN", "toolgatetest-probe", "token").Obj()
	var last error
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = as.Create(ctx, tool.DeepCopy(), client.DryRunAll)
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), "'"+admission.CredentialPolicyName+"'"), nil
	})
	if err != nil {
		if last == nil {
			last = errors.New("a Tool naming a Secret its author may not get was admitted")
		}
		return fmt.Errorf("admission policy %s not in effect: %w", admission.CredentialPolicyName, last)
	}
	return nil
}

// IsCredentialPolicyDenial reports whether err is the toolgate-credentials policy's refusal.
func IsCredentialPolicyDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "'"+admission.CredentialPolicyName+"'")
}

// IsIdentityPolicyDenial reports whether err is the toolgate-identity policy's refusal.
func IsIdentityPolicyDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "'"+admission.IdentityPolicyName+"'")
}

// cancelProbeUser may patch ToolCalls (RBAC) but is neither a probe call's requester nor
// granted "cancel": the toolgate-cancel policy refuses its cancel.
const cancelProbeUser = "toolgatetest:canceller"

// waitForCancelPolicy polls until the toolgate-cancel policy refuses a cancel by a user who
// is not the requester, and the toolgate-record policy a finalizer added by a user who is
// not the operator: a probe call in the default namespace, a throw-away ClusterRole that
// lets cancelProbeUser patch calls, and dry-run patches as that user. The probe objects are
// deleted afterwards (no manager runs yet, so the call is never reconciled).
func (e *Env) waitForCancelPolicy(ctx context.Context) (err error) {
	const name = "toolgatetest-cancel-probe"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{toolgatev1alpha1.GroupVersion.Group}, Resources: []string{"toolcalls"}, Verbs: []string{"get", "patch"},
	}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: cancelProbeUser}}}
	call := MakeToolCall(name, metav1.NamespaceDefault).Obj()
	for _, obj := range []client.Object{role, binding, call} {
		if err := e.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating the cancel probe's %T: %w", obj, err)
		}
		defer func() {
			if derr := client.IgnoreNotFound(e.Client.Delete(context.WithoutCancel(ctx), obj)); derr != nil && err == nil {
				err = fmt.Errorf("deleting the cancel probe's %T: %w", obj, derr)
			}
		}()
	}
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: cancelProbeUser}
	as, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return err
	}
	for _, p := range []struct {
		policy, patch, admitted string
	}{
		{admission.CancelPolicyName, `{"spec":{"cancel":true}}`, "another user's cancel was admitted"},
		{admission.RecordPolicyName, `{"metadata":{"finalizers":["toolgatetest.dev/probe"]}}`, "a finalizer added by a user who is not the operator was admitted"},
	} {
		if err := refusedAs(ctx, as, call, p.policy, p.patch, p.admitted); err != nil {
			return err
		}
	}
	return nil
}

// refusedAs polls, with dry-run merge patches of call through c, until policy refuses patch.
func refusedAs(ctx context.Context, c client.Client, call client.Object, policy, patch, admitted string) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = c.Patch(ctx, call.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, []byte(patch)), client.DryRunAll)
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), "'"+policy+"'"), nil
	})
	if err != nil {
		if last == nil {
			last = errors.New(admitted)
		}
		return fmt.Errorf("admission policy %s not in effect: %w", policy, last)
	}
	return nil
}

// IsRecordPolicyDenial reports whether err is the toolgate-record policy's refusal.
func IsRecordPolicyDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "'"+admission.RecordPolicyName+"'")
}

// IsCancelPolicyDenial reports whether err is the toolgate-cancel policy's refusal.
func IsCancelPolicyDenial(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "'"+admission.CancelPolicyName+"'")
}
