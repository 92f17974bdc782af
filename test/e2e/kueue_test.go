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
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kueue on the local cluster (docs/kueue-local.md): make up starts Kueue's manager and applies
// Cohort toolgate, sized to the node, ClusterQueue toolgate, which borrows all of it, and
// LocalQueue toolgate in toolgate-demo. These
// specs use plain batch/v1 Jobs, created suspended and labelled as the operator will create
// its own (issue 34): Kueue admits what fits the quota and holds what does not.

const (
	kueueQueueLabel = "kueue.x-k8s.io/queue-name"
	kueueQueue      = "toolgate"
	// kueueAdmitTimeout bounds create -> unsuspended (a few hundred ms on an idle node).
	kueueAdmitTimeout = 60 * time.Second
)

var (
	kueueWorkloadList = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "WorkloadList"}
	kueueCohort       = schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "Cohort"}
)

var _ = Describe("Kueue admits Jobs through ClusterQueue toolgate", Label("kueue"), func() {
	It("admits a suspended, labelled Job whose requests fit and lets it complete", func(ctx SpecContext) {
		job := kueueJob("e2e-kueue-fits-", resource.MustParse("50m"), resource.MustParse("16Mi"))
		created := time.Now()
		Expect(admin.Create(ctx, job)).To(Succeed())
		deleteJobAtEnd(job)

		By("Kueue admits its Workload and unsuspends the Job")
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Spec.Suspend).To(HaveValue(BeFalse()))
		}).WithContext(ctx).WithTimeout(kueueAdmitTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
		admitted := time.Since(created)
		wl := jobWorkload(ctx, job)
		Expect(workloadCondition(wl, "Admitted")).To(HaveValue(HaveField("Status", metav1.ConditionTrue)))

		By("the Job's Pod runs to completion")
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(jobCondition(job, batchv1.JobComplete)).To(BeTrue(), "Job %s not complete: %+v", job.Name, job.Status)
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		AddReportEntry("kueue: create -> unsuspended, -> complete",
			fmt.Sprintf("%s, %s", admitted.Round(time.Millisecond), time.Since(created).Round(time.Millisecond)))
	})

	It("keeps a Job whose requests exceed the ClusterQueue's quota suspended, its Workload not admitted", func(ctx SpecContext) {
		// One core more than the node's whole quota (the Cohort's, all ClusterQueue toolgate
		// may borrow): it can never fit.
		quota := cohortQuota(ctx, corev1.ResourceCPU)
		tooMuch := quota.DeepCopy()
		tooMuch.Add(resource.MustParse("1"))
		job := kueueJob("e2e-kueue-too-big-", tooMuch, resource.MustParse("16Mi"))
		Expect(admin.Create(ctx, job)).To(Succeed())
		deleteJobAtEnd(job)

		By(fmt.Sprintf("its Workload (cpu %s, quota %s) is pending, quota not reserved", tooMuch.String(), quota.String()))
		var wl *unstructured.Unstructured
		Eventually(func(g Gomega) {
			wl = jobWorkloadOrNil(ctx, g, job)
			g.Expect(wl).NotTo(BeNil(), "no Workload for Job %s yet", job.Name)
			c := workloadCondition(wl, "QuotaReserved")
			g.Expect(c).NotTo(BeNil(), "Workload %s has no QuotaReserved condition yet", wl.GetName())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		}).WithContext(ctx).WithTimeout(kueueAdmitTimeout).WithPolling(poll).Should(Succeed())
		AddReportEntry("kueue: why the Workload waits", workloadCondition(wl, "QuotaReserved").Message)

		By("the Job stays suspended and starts no Pod")
		Consistently(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(job.Spec.Suspend).To(HaveValue(BeTrue()))
			g.Expect(job.Status.Active).To(BeZero())
			wl := jobWorkloadOrNil(ctx, g, job)
			g.Expect(wl).NotTo(BeNil())
			admitted := workloadCondition(wl, "Admitted")
			g.Expect(admitted == nil || admitted.Status != metav1.ConditionTrue).To(BeTrue(), "Workload %s admitted: %+v", wl.GetName(), admitted)
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(poll).Should(Succeed())
		var pods corev1.PodList
		Expect(admin.List(ctx, &pods, client.InNamespace(demoNS), client.MatchingLabels{"batch.kubernetes.io/job-name": job.Name})).To(Succeed())
		Expect(pods.Items).To(BeEmpty())
	})

	// Two requester groups, ClusterQueue toolgate and a second one in cohort toolgate, both
	// borrowing the node's quota. Toolgate's Jobs fill it; a Job of each group waits, toolgate's
	// created first. When room for one frees up, fair sharing admits the other group's (whose
	// share is 0) although toolgate's waited longer; FIFO across the Cohort would not. Serial:
	// it fills the Cohort's quota for up to 40 s (other queued Jobs would wait), and the node's
	// CPU with it.
	It("admits from the requester group with the lower share first (fair sharing in the Cohort)", Serial, func(ctx SpecContext) {
		const other = "e2e-kueue-fair"
		createFairQueue(ctx, other)
		quota := cohortQuota(ctx, corev1.ResourceCPU)
		half := *resource.NewMilliQuantity(quota.MilliValue()/2, resource.DecimalSI)
		twoFifths := *resource.NewMilliQuantity(quota.MilliValue()*2/5, resource.DecimalSI)
		mem := resource.MustParse("16Mi")

		By(fmt.Sprintf("toolgate's two Jobs take the quota (%s cpu each of %s): one for 10 s, one for 40 s", half.String(), quota.String()))
		short := kueueJobIn(kueueQueue, "e2e-kueue-short-", half, mem, "sleep", "10")
		long := kueueJobIn(kueueQueue, "e2e-kueue-long-", half, mem, "sleep", "40")
		for _, j := range []*batchv1.Job{short, long} {
			Expect(admin.Create(ctx, j)).To(Succeed())
			deleteJobAtEnd(j)
		}
		for _, j := range []*batchv1.Job{short, long} {
			waitUnsuspended(ctx, j)
		}

		By(fmt.Sprintf("a Job of each group waits (%s cpu each): toolgate's first, then %s's", twoFifths.String(), other))
		mine := kueueJobIn(kueueQueue, "e2e-kueue-mine-", twoFifths, mem, "true")
		Expect(admin.Create(ctx, mine)).To(Succeed())
		deleteJobAtEnd(mine)
		time.Sleep(time.Second) // a creation timestamp a second later: FIFO would pick mine
		theirs := kueueJobIn(other, "e2e-kueue-theirs-", twoFifths, mem, "true")
		Expect(admin.Create(ctx, theirs)).To(Succeed())
		deleteJobAtEnd(theirs)
		Consistently(func(g Gomega) {
			for _, j := range []*batchv1.Job{mine, theirs} {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
				g.Expect(j.Spec.Suspend).To(HaveValue(BeTrue()), "Job %s admitted while the quota was full", j.Name)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())

		By("the short Job ends: the other group's Job is admitted, toolgate's keeps waiting")
		waitUnsuspended(ctx, theirs)
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
		Expect(mine.Spec.Suspend).To(HaveValue(BeTrue()), "toolgate's Job %s was admitted before the other group's", mine.Name)
		Consistently(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(mine), mine)).To(Succeed())
			g.Expect(mine.Spec.Suspend).To(HaveValue(BeTrue()))
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())
	})

	// A requester group from hack/addons/kueue.sh group NAME NS 2: it may borrow at most half of
	// the Cohort's quota. Three of its Jobs of a fifth each: two run, the third waits although the
	// Cohort has room for it, and a Job of ClusterQueue toolgate is admitted meanwhile. With the
	// group made by `group NAME NS 1` (no cap) all three run. Serial: it takes 3/5 of the quota.
	It("caps a requester group at its share of the Cohort although the rest is idle", Serial, func(ctx SpecContext) {
		const capped = "e2e-kueue-cap"
		requesterGroup(ctx, capped, 2)
		quota := cohortQuota(ctx, corev1.ResourceCPU)
		fifth := *resource.NewMilliQuantity(quota.MilliValue()/5, resource.DecimalSI)
		mem := resource.MustParse("16Mi")

		By(fmt.Sprintf("three Jobs of %s cpu (quota %s) in the group capped at half", fifth.String(), quota.String()))
		var jobs []*batchv1.Job
		for range 3 {
			j := kueueJobIn(capped, "e2e-kueue-cap-", fifth, mem, "sleep", "20")
			Expect(admin.Create(ctx, j)).To(Succeed())
			deleteJobAtEnd(j)
			jobs = append(jobs, j)
		}
		admitted := func(g Gomega) int {
			n := 0
			for _, j := range jobs {
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(j), j)).To(Succeed())
				if !ptr.Deref(j.Spec.Suspend, true) {
					n++
				}
			}
			return n
		}
		Eventually(admitted).WithContext(ctx).WithTimeout(kueueAdmitTimeout).WithPolling(poll).Should(Equal(2))

		By("ClusterQueue toolgate's Job is admitted; the group's third keeps waiting")
		other := kueueJobIn(kueueQueue, "e2e-kueue-beside-", fifth, mem, "true")
		Expect(admin.Create(ctx, other)).To(Succeed())
		deleteJobAtEnd(other)
		waitUnsuspended(ctx, other)
		Consistently(admitted).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(poll).Should(Equal(2))
	})
})

// waitUnsuspended waits until Kueue admitted the Job (it unsuspends it).
func waitUnsuspended(ctx context.Context, job *batchv1.Job) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		g.Expect(job.Spec.Suspend).To(HaveValue(BeFalse()), "Job %s still suspended", job.Name)
	}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
}

// createFairQueue creates a second requester group: ClusterQueue name in cohort toolgate,
// shaped as toolgate (nominal quota 0, borrowing the Cohort's; no preemption), and LocalQueue
// name in toolgate-demo pointing at it; both deleted when the spec ends.
func createFairQueue(ctx context.Context, name string) {
	GinkgoHelper()
	zero := []any{
		map[string]any{"name": "cpu", "nominalQuota": "0"},
		map[string]any{"name": "memory", "nominalQuota": "0"},
		map[string]any{"name": "ephemeral-storage", "nominalQuota": "0"},
		map[string]any{"name": "pods", "nominalQuota": "0"},
	}
	cq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
		"metadata": map[string]any{"name": name, "labels": map[string]any{e2eLabel: "true"}},
		"spec": map[string]any{
			"cohortName": kueueQueue, "namespaceSelector": map[string]any{}, "queueingStrategy": "BestEffortFIFO",
			"preemption": map[string]any{"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"cpu", "memory", "ephemeral-storage", "pods"},
				"flavors":          []any{map[string]any{"name": "default", "resources": zero}},
			}},
		},
	}}
	lq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": name, "namespace": demoNS, "labels": map[string]any{e2eLabel: "true"}},
		"spec":     map[string]any{"clusterQueue": name},
	}}
	for _, o := range []*unstructured.Unstructured{cq, lq} {
		Expect(admin.Create(ctx, o)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(admin.Delete(ctx, o))).To(Succeed())
		})
	}
	waitActive(ctx, cq, lq)
}

// requesterGroup makes a requester group with hack/addons/kueue.sh group NAME toolgate-demo N
// (ClusterQueue and LocalQueue name in Cohort toolgate, borrowing at most 1/n of its quota),
// waits until both are active and deletes them when the spec ends.
func requesterGroup(ctx context.Context, name string, n int) {
	GinkgoHelper()
	group := exec.CommandContext(ctx, filepath.Join(root, "hack", "addons", "kueue.sh"), "group", name, demoNS, strconv.Itoa(n))
	group.Env = append(os.Environ(), "KUEUE_ADMIN_KUBECONFIG="+adminCfg)
	out, err := group.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kueue.sh group: %s", out)
	cq := &unstructured.Unstructured{}
	cq.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "ClusterQueue"})
	cq.SetName(name)
	lq := &unstructured.Unstructured{}
	lq.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "LocalQueue"})
	lq.SetName(name)
	lq.SetNamespace(demoNS)
	for _, o := range []*unstructured.Unstructured{lq, cq} {
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(admin.Delete(ctx, o))).To(Succeed())
		})
	}
	waitActive(ctx, cq, lq)
}

// waitActive waits until each Kueue queue (ClusterQueue, LocalQueue) reports Active.
func waitActive(ctx context.Context, queues ...*unstructured.Unstructured) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, o := range queues {
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			active := false
			for _, c := range conds {
				m, _ := c.(map[string]any)
				active = active || (m["type"] == "Active" && m["status"] == "True")
			}
			g.Expect(active).To(BeTrue(), "%s %s not Active", o.GetKind(), o.GetName())
		}
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}

// kueueJob is a plain Job of the tools image (busybox true, Pod Security "restricted") in
// toolgate-demo: suspended, labelled for LocalQueue toolgate, with these requests.
func kueueJob(generateName string, cpu, memory resource.Quantity) *batchv1.Job {
	return kueueJobIn(kueueQueue, generateName, cpu, memory, "true")
}

// kueueJobIn is kueueJob for LocalQueue queue, running busybox with args.
func kueueJobIn(queue, generateName string, cpu, memory resource.Quantity, args ...string) *batchv1.Job {
	pod := restrictedPod("", args...)
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory},
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: generateName, Namespace: demoNS,
			Labels: map[string]string{e2eLabel: "true", kueueQueueLabel: queue},
		},
		Spec: batchv1.JobSpec{
			Suspend:                 ptr.To(true),
			BackoffLimit:            ptr.To[int32](0),
			TTLSecondsAfterFinished: ptr.To[int32](300),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{e2eLabel: "true"}},
				Spec:       pod.Spec,
			},
		},
	}
}

func deleteJobAtEnd(job *batchv1.Job) {
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, job,
			client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
	})
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// jobWorkload returns the Workload Kueue created for the Job (owned by it).
func jobWorkload(ctx context.Context, job *batchv1.Job) *unstructured.Unstructured {
	GinkgoHelper()
	var wl *unstructured.Unstructured
	Eventually(func(g Gomega) {
		wl = jobWorkloadOrNil(ctx, g, job)
		g.Expect(wl).NotTo(BeNil(), "no Workload for Job %s", job.Name)
	}).WithContext(ctx).WithTimeout(kueueAdmitTimeout).WithPolling(poll).Should(Succeed())
	return wl
}

func jobWorkloadOrNil(ctx context.Context, g Gomega, job *batchv1.Job) *unstructured.Unstructured {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueueWorkloadList)
	g.Expect(admin.List(ctx, list, client.InNamespace(job.Namespace))).To(Succeed())
	for i := range list.Items {
		for _, o := range list.Items[i].GetOwnerReferences() {
			if o.UID == job.UID {
				return &list.Items[i]
			}
		}
	}
	return nil
}

// workloadCondition returns the Workload's condition of that type, or nil.
func workloadCondition(wl *unstructured.Unstructured, t string) *metav1.Condition {
	raw, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	conds := make([]metav1.Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		s, _ := m["status"].(string)
		ty, _ := m["type"].(string)
		msg, _ := m["message"].(string)
		reason, _ := m["reason"].(string)
		conds = append(conds, metav1.Condition{Type: ty, Status: metav1.ConditionStatus(s), Message: msg, Reason: reason})
	}
	return meta.FindStatusCondition(conds, t)
}

// cohortQuota returns Cohort toolgate's nominal quota of a resource (flavor default): the
// node's capacity for queued Jobs, which ClusterQueue toolgate borrows.
func cohortQuota(ctx context.Context, name corev1.ResourceName) resource.Quantity {
	GinkgoHelper()
	cohort := &unstructured.Unstructured{}
	cohort.SetGroupVersionKind(kueueCohort)
	Expect(admin.Get(ctx, client.ObjectKey{Name: kueueQueue}, cohort)).To(Succeed(), "Cohort %s (make up applies it)", kueueQueue)
	groups, _, _ := unstructured.NestedSlice(cohort.Object, "spec", "resourceGroups")
	for _, g := range groups {
		flavors, _, _ := unstructured.NestedSlice(g.(map[string]any), "flavors")
		for _, f := range flavors {
			resources, _, _ := unstructured.NestedSlice(f.(map[string]any), "resources")
			for _, r := range resources {
				m := r.(map[string]any)
				if m["name"] == string(name) {
					return resource.MustParse(fmt.Sprint(m["nominalQuota"]))
				}
			}
		}
	}
	Fail(fmt.Sprintf("Cohort %s has no quota for %s", kueueQueue, name))
	return resource.Quantity{}
}
