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

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/toolcall"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// auditRecordsOf reads the audit records of the call with uid from every operator replica's
// log, by message.
func auditRecordsOf(ctx context.Context, uid string) map[string]map[string]any {
	GinkgoHelper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminCfg)
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	pods, err := operatorPods(ctx)
	Expect(err).NotTo(HaveOccurred())
	out := map[string]map[string]any{}
	for _, p := range pods {
		stream, err := cs.CoreV1().Pods(systemNS).GetLogs(p.Name, &corev1.PodLogOptions{}).Stream(ctx)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(stream)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["uid"] == uid {
				if msg, ok := rec["msg"].(string); ok {
					out[msg] = rec
				}
			}
		}
		_ = stream.Close()
	}
	return out
}

// The record belongs to the operator: a running call an admin deletes has its body stopped
// and leaves its audit records before it goes.
var _ = Describe("A running call deleted by an admin", Label("trust", "deletion"), func() {
	It("stops the body's Pod and records the end (Deleted) before the call goes", func(ctx SpecContext) {
		createTool(ctx, toolgatetest.MakeTool("e2e-delete-sleep", demoNS).Image(toolImage).
			Command("/tools/sleep").Timeout(2*time.Minute).Obj())
		call := createCall(ctx, "e2e-delete-sleep", "", map[string]any{"seconds": 100})
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, call)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Status.Phase).To(Equal(corev1.PodRunning), "the body runs")
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		live := &toolgatev1alpha1.ToolCall{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), live)).To(Succeed())
		Expect(live.Finalizers).To(ContainElement(toolgatev1alpha1.FinalizerRecord),
			"the stamp policy put the operator's finalizer on the call at create")

		deleted := time.Now()
		Expect(admin.Delete(ctx, live)).To(Succeed())
		Eventually(func() error {
			return admin.Get(ctx, client.ObjectKeyFromObject(call), &toolgatev1alpha1.ToolCall{})
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func() []corev1.Pod { return podsOf(ctx, call) }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(poll).Should(BeEmpty(), "the body is stopped")
		GinkgoWriter.Printf("deleted → gone in %v\n", time.Since(deleted).Round(time.Millisecond))

		Eventually(func(g Gomega) {
			records := auditRecordsOf(ctx, string(live.UID))
			g.Expect(records).To(HaveKey(toolcall.AuditMessage))
			g.Expect(records[toolcall.AuditMessage]).To(HaveKeyWithValue("reason", toolgatev1alpha1.ReasonDeleted))
			g.Expect(records).To(HaveKey(toolcall.AuditReleasedMessage))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	}, SpecTimeout(4*time.Minute))
})
