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
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator runs two replicas (the chart's default): one holds the leader-election
// Lease and reconciles, the other stands by. Specs that fault the operator fault the
// leader, found from the Lease.

// leaseName is the operator's leader-election Lease (--leader-election-id) in systemNS.
const leaseName = "toolgate.dev"

// podOfHolder is the Pod name in a holderIdentity: controller-runtime's identity is
// <hostname>_<uuid>, and a Pod's hostname is its name.
func podOfHolder(holder string) string {
	pod, _, _ := strings.Cut(holder, "_")
	return pod
}

// leaderPod is the operator Pod holding the Lease now (live, not being deleted).
func leaderPod(ctx context.Context) (*corev1.Pod, error) {
	var lease coordinationv1.Lease
	if err := admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: leaseName}, &lease); err != nil {
		return nil, err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return nil, fmt.Errorf("nobody holds the Lease %s/%s", systemNS, leaseName)
	}
	holder := *lease.Spec.HolderIdentity
	pods, err := operatorPods(ctx)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Name == podOfHolder(holder) {
			return &pods[i], nil
		}
	}
	return nil, fmt.Errorf("the Lease holder %s is no live operator Pod", holder)
}

// operatorPods are the operator's Pods not being deleted.
func operatorPods(ctx context.Context) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := admin.List(ctx, &pods, client.InNamespace(systemNS),
		client.MatchingLabels{"app.kubernetes.io/name": release, "app.kubernetes.io/component": "manager"}); err != nil {
		return nil, err
	}
	live := pods.Items[:0]
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitOperatorAvailable waits until the operator is whole again: every replica of the
// Deployment Ready (a Pod is Ready once its informers synced, leader or not), no Pod
// left terminating, and a live Pod holding the Lease.
func waitOperatorAvailable(ctx context.Context) {
	waitOperatorAvailableWithin(ctx, 2*time.Minute)
}

func waitOperatorAvailableWithin(ctx context.Context, limit time.Duration) {
	Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: release}, &d)).To(Succeed())
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		var all corev1.PodList
		g.Expect(admin.List(ctx, &all, client.InNamespace(systemNS),
			client.MatchingLabels{"app.kubernetes.io/name": release, "app.kubernetes.io/component": "manager"})).To(Succeed())
		ready := 0
		for i := range all.Items {
			g.Expect(all.Items[i].DeletionTimestamp).To(BeNil(), "operator Pod %s terminating", all.Items[i].Name)
			if podReady(&all.Items[i]) {
				ready++
			}
		}
		g.Expect(ready).To(BeNumerically(">=", int(want)), "ready operator Pods")
		_, err := leaderPod(ctx)
		g.Expect(err).NotTo(HaveOccurred())
	}).WithContext(ctx).WithTimeout(limit).WithPolling(poll).Should(Succeed())
}
