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

// Package api_test proves toolgate's API-level rules (CRD schemas, CEL validation and
// transition rules, defaults, printer columns, the identity admission policy) on a real
// kube-apiserver started by envtest. No controller runs here: every status write is the
// test's own, as a controller (or an attacker) would make it.
package api_test

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

var (
	env       *toolgatetest.Env
	k8sClient client.Client
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "API Suite")
}

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(toolgatetest.Timeout)
	SetDefaultEventuallyPollingInterval(toolgatetest.Interval)
	start := time.Now()
	var err error
	env, err = toolgatetest.Start(toolgatetest.Options{})
	Expect(err).NotTo(HaveOccurred())
	k8sClient = env.Client
	GinkgoWriter.Printf("envtest with CRDs and admission policies ready in %s\n", time.Since(start).Round(time.Millisecond))
})

var _ = AfterSuite(func() {
	Expect(env.Stop()).To(Succeed())
})

// newNamespace creates a namespace for the running spec and deletes it afterwards.
func newNamespace(ctx SpecContext) string {
	ns, err := env.CreateNamespace(ctx, "api")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

// createCall creates the call as the admin and returns the stored object.
func createCall(ctx SpecContext, w *toolgatetest.ToolCallWrapper) *toolgatev1alpha1.ToolCall {
	tc := w.Obj()
	Expect(k8sClient.Create(ctx, tc)).To(Succeed())
	return tc
}

// writeStatus reads the call, applies mutate to its status and writes it through the status
// subresource, as the controller does; it returns the apiserver's answer.
func writeStatus(ctx SpecContext, tc *toolgatev1alpha1.ToolCall, mutate func(*toolgatev1alpha1.ToolCallStatus)) error {
	fresh := &toolgatev1alpha1.ToolCall{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tc), fresh)).To(Succeed())
	mutate(&fresh.Status)
	return k8sClient.Status().Update(ctx, fresh)
}
