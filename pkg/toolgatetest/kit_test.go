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
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
)

func TestCRDsCoverEveryKind(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range crds {
		got = append(got, c.Spec.Names.Kind)
		if c.Spec.Group != toolgatev1alpha1.GroupVersion.Group || c.Spec.Versions[0].Subresources == nil {
			t.Errorf("%s: group %q, subresources %v", c.Name, c.Spec.Group, c.Spec.Versions[0].Subresources)
		}
	}
	want := []string{"ClusterTool", "ToolCallApproval", "ToolCall", "ToolPolicy", "Tool", "ToolScope"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRD kinds (-want +got):\n%s", diff)
	}
}

func TestAdmissionPoliciesComeBeforeBindings(t *testing.T) {
	objs, err := AdmissionPolicies()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 12 {
		t.Fatalf("got %d objects, want six policies and six bindings", len(objs))
	}
	p, ok := objs[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok || p.Name != "toolgate-identity" || len(p.Spec.Validations) != 4 {
		t.Errorf("first object: %#v", objs[0])
	}
	var mutating []string
	for _, o := range objs[1:3] {
		m, ok := o.(*admissionregistrationv1.MutatingAdmissionPolicy)
		if !ok || len(m.Spec.Mutations) != 1 || m.Spec.Mutations[0].PatchType != admissionregistrationv1.PatchTypeJSONPatch {
			t.Errorf("policy: %#v", o)
			continue
		}
		mutating = append(mutating, m.Name)
	}
	if want := []string{"toolgate-requester", "toolgate-approver"}; fmt.Sprint(mutating) != fmt.Sprint(want) {
		t.Errorf("mutating policies %v, want %v", mutating, want)
	}
	c, ok := objs[3].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok || c.Name != "toolgate-cancel" || len(c.Spec.Validations) != 1 || len(c.Spec.MatchConditions) != 1 {
		t.Errorf("fourth object: %#v", objs[3])
	}
	r, ok := objs[4].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok || r.Name != "toolgate-record" || len(r.Spec.MatchConditions) != 2 {
		t.Errorf("fifth object: %#v", objs[4])
	}
	cr, ok := objs[5].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !ok || cr.Name != "toolgate-credentials" || len(cr.Spec.Validations) != 16 || len(cr.Spec.MatchConditions) != 1 {
		t.Errorf("sixth object: %#v", objs[5])
	}
	if b, ok := objs[6].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); !ok || b.Spec.PolicyName != p.Name {
		t.Errorf("first binding: %#v", objs[6])
	}
	for i, name := range mutating {
		if b, ok := objs[7+i].(*admissionregistrationv1.MutatingAdmissionPolicyBinding); !ok || b.Spec.PolicyName != name {
			t.Errorf("binding %d: %#v", 7+i, objs[7+i])
		}
	}
	if b, ok := objs[9].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); !ok || c == nil || b.Spec.PolicyName != c.Name {
		t.Errorf("cancel binding: %#v", objs[9])
	}
	if b, ok := objs[10].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); !ok || r == nil || b.Spec.PolicyName != r.Name {
		t.Errorf("record binding: %#v", objs[10])
	}
	if b, ok := objs[11].(*admissionregistrationv1.ValidatingAdmissionPolicyBinding); !ok || cr == nil || b.Spec.PolicyName != cr.Name {
		t.Errorf("last binding: %#v", objs[11])
	}
}

func TestBuilders(t *testing.T) {
	tc := MakeToolCall("c", "ns").Tool("grep").Args(map[string]any{"b": 1, "a": "x"}).Session("s").Obj()
	if string(tc.Spec.Arguments.Raw) != `{"a":"x","b":1}` || tc.Spec.Requester != AdminUser || tc.Spec.Session != "s" {
		t.Errorf("ToolCall spec: %+v", tc.Spec)
	}
	if got := Digest([]byte(EmptyArguments)); got != "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Errorf("Digest({}) = %s", got)
	}
	if a := MakeToolCallApproval("c", "ns").Deny().Obj(); a.Spec.ArgumentsDigest != Digest([]byte(EmptyArguments)) || a.Spec.Decision != toolgatev1alpha1.DecisionDeny {
		t.Errorf("approval spec: %+v", a.Spec)
	}
	parked := MakeToolCall("c", "ns").Obj()
	parked.UID, parked.Status.ArgumentsDigest = "6c1d4d0e-0000-4000-8000-000000000001", Digest([]byte(`{"a":1}`))
	if a := MakeToolCallApproval("c", "ns").For(parked).Obj(); a.Spec.CallUID != string(parked.UID) ||
		a.Spec.ArgumentsDigest != parked.Status.ArgumentsDigest || len(a.OwnerReferences) != 1 ||
		!cmp.Equal(a.OwnerReferences[0], agentclient.ApprovalOwner(parked)) {
		t.Errorf("approval For(call): %+v", a)
	}
	ct := MakeClusterTool("echo").Timeout(time.Second).Retry(3, toolgatev1alpha1.ReasonOOMKilled).Env("A", "1").Obj()
	want := toolgatev1alpha1.ToolSpec{
		Timeout: &metav1.Duration{Duration: time.Second},
		Retry:   toolgatev1alpha1.RetryPolicy{MaxAttempts: 3, OnReasons: []string{"OOMKilled"}},
		Body:    toolgatev1alpha1.ToolBody{Image: DefaultImage, Env: []toolgatev1alpha1.EnvVar{{Name: "A", Value: "1"}}},
	}
	if diff := cmp.Diff(want, ct.Spec); diff != "" {
		t.Errorf("ClusterTool spec (-want +got):\n%s", diff)
	}
	w := MakeTool("t", "ns").Scope("s")
	first := w.Obj()
	w.Name("changed")
	if first.Spec.Name != "" || first.Spec.Scope != "s" {
		t.Errorf("Obj must return a copy: %+v", first.Spec)
	}
}

func TestMatchers(t *testing.T) {
	g := gomega.NewWithT(t)
	tc := MakeToolCall("c", "ns").Phase(toolgatev1alpha1.PhaseDenied).Verdict(toolgatev1alpha1.VerdictDeny).
		Condition(metav1.Condition{Type: toolgatev1alpha1.ConditionAdmitted, Status: metav1.ConditionFalse, Reason: toolgatev1alpha1.ReasonPolicyDenied}).Obj()

	g.Expect(tc).To(HaveCondition(toolgatev1alpha1.ConditionAdmitted, metav1.ConditionFalse, toolgatev1alpha1.ReasonPolicyDenied))
	g.Expect(*tc).To(HaveCondition(toolgatev1alpha1.ConditionAdmitted, metav1.ConditionFalse, ""))
	g.Expect(tc.Status.Conditions).To(HaveCondition(toolgatev1alpha1.ConditionAdmitted, metav1.ConditionFalse, ""))
	g.Expect(tc).NotTo(HaveCondition(toolgatev1alpha1.ConditionAdmitted, metav1.ConditionTrue, ""))
	g.Expect(tc).NotTo(HaveCondition(toolgatev1alpha1.ConditionAdmitted, metav1.ConditionFalse, toolgatev1alpha1.ReasonGuardDenied))
	g.Expect(tc).NotTo(HaveCondition(toolgatev1alpha1.ConditionCompleted, metav1.ConditionFalse, ""))
	g.Expect(MakeToolScope("s", "ns").Obj()).NotTo(HaveCondition(toolgatev1alpha1.ConditionReady, metav1.ConditionTrue, ""))
	if ok, err := HaveCondition("X", metav1.ConditionTrue, "").Match(42); ok || err == nil {
		t.Errorf("HaveCondition(42) = %v, %v; want an error", ok, err)
	}

	g.Expect(tc).To(HavePhase(toolgatev1alpha1.PhaseDenied))
	g.Expect(tc).NotTo(HavePhase(toolgatev1alpha1.PhaseSucceeded))
	g.Expect(*tc).To(HaveVerdict(toolgatev1alpha1.VerdictDeny))
	g.Expect(tc).To(BeTerminal())
	g.Expect(MakeToolCall("r", "ns").Phase(toolgatev1alpha1.PhaseRunning).Obj()).NotTo(BeTerminal())
	g.Expect(BeTerminal().FailureMessage(MakeToolCall("r", "ns").Phase(toolgatev1alpha1.PhaseRunning).Obj())).
		To(gomega.Equal(`Expected ToolCall ns/r to be terminal (Succeeded, Failed or Denied), but its phase is "Running"`))
	if ok, err := BeTerminal().Match("c"); ok || err == nil {
		t.Errorf("BeTerminal(string) = %v, %v; want an error", ok, err)
	}

	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "toolgate.dev", Kind: "ToolCall"}, "c",
		field.ErrorList{field.Invalid(field.NewPath("spec"), "x", "spec is immutable")})
	g.Expect(invalid).To(BeAPIError(metav1.StatusReasonInvalid, "spec is immutable"))
	g.Expect(invalid).NotTo(BeAPIError(metav1.StatusReasonForbidden, "spec is immutable"))
	g.Expect(invalid).NotTo(BeAPIError(metav1.StatusReasonInvalid, "result is immutable"))
	g.Expect(errors.New("plain")).NotTo(BeAPIError(metav1.StatusReasonInvalid))
	g.Expect(IsIdentityPolicyDenial(invalid)).To(gomega.BeFalse())
	var nilErr error
	g.Expect(nilErr).NotTo(BeAPIError(metav1.StatusReasonInvalid))

	raw, err := json.Marshal(OKResult(map[string]int{"n": 1}))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(raw).To(gomega.MatchJSON(`{"ok":true,"content":{"n":1}}`))
}

func TestShippedUserRoles(t *testing.T) {
	for _, role := range []UserRole{AgentRole, ApproverRole, OperatorRole} {
		cr, err := role.ClusterRole()
		if err != nil {
			t.Fatal(err)
		}
		if cr.Name != string(role) || len(cr.Rules) == 0 {
			t.Errorf("%s: name %q, %d rules", role, cr.Name, len(cr.Rules))
		}
	}
	if _, err := UserRole("toolgate-admin").ClusterRole(); err == nil {
		t.Error("an unknown role must be an error")
	}
}
