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

package api_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// callList is a kind: List of two ToolCalls and one ToolCallApproval, none naming who asks.
const callList = `apiVersion: v1
kind: List
items:
- apiVersion: toolgate.dev/v1alpha1
  kind: ToolCall
  metadata: {name: a, namespace: %[1]s}
  spec: {tool: echo, arguments: {text: a}}
- apiVersion: toolgate.dev/v1alpha1
  kind: ToolCall
  metadata: {name: b, namespace: %[1]s}
  spec: {tool: echo, arguments: {text: b}}
- apiVersion: toolgate.dev/v1alpha1
  kind: ToolCallApproval
  metadata: {name: a, namespace: %[1]s}
  spec: {callUID: %[2]s, decision: Deny, argumentsDigest: "sha256:%064[3]d"}
`

var _ = Describe("Identity fields a client need not send", Label("admission", "identity"), func() {
	It("lets kubectl create a kind: List of calls and approvals without requester or approver, each stamped", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		user, err := env.Env.AddUser(envtest.User{Name: "alice", Groups: []string{tgt.EditorsGroup}}, nil)
		Expect(err).NotTo(HaveOccurred())
		kubectl, err := user.Kubectl()
		Expect(err).NotTo(HaveOccurred())
		file := filepath.Join(GinkgoT().TempDir(), "list.yaml")
		Expect(os.WriteFile(file, fmt.Appendf(nil, callList, ns, someCallUID, 0), 0o600)).To(Succeed())

		// kubectl validates each item of a List against the CRD's OpenAPI schema on the client
		// (a List has no server-side field validation): a required requester failed here.
		stdout, stderr, err := kubectl.Run("create", "-f", file)
		out, _ := io.ReadAll(stdout)
		errOut, _ := io.ReadAll(stderr)
		Expect(err).NotTo(HaveOccurred(), "kubectl create: %s%s", out, errOut)
		for _, name := range []string{"a", "b"} {
			call := &toolgatev1alpha1.ToolCall{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call)).To(Succeed())
			Expect(call.Spec.Requester).To(Equal("alice"), name)
		}
		approval := &toolgatev1alpha1.ToolCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, approval)).To(Succeed())
		Expect(approval.Spec.Approver).To(Equal("alice"))
	})

	It("stamps a call created through the dynamic (unstructured) client without a requester", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		alice, err := env.AddUser("alice", []string{tgt.EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "toolgate.dev/v1alpha1", "kind": "ToolCall",
			"metadata": map[string]any{"name": "c", "namespace": ns},
			"spec":     map[string]any{"tool": "echo", "arguments": map[string]any{"text": "x"}},
		}}
		Expect(alice.Create(ctx, u)).To(Succeed())
		requester, _, _ := unstructured.NestedString(u.Object, "spec", "requester")
		Expect(requester).To(Equal("alice"))
	})
})
