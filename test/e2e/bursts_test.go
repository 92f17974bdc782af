package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Issue 34 on real Pods: toolgate's Jobs wait in Kueue's LocalQueue toolgate (make up starts
// Kueue with a ClusterQueue sized to the node): a burst over the quota all succeeds, and a
// call on a queue nobody serves ends NotAdmitted at its bound.

// admissionScope is a scope whose calls' Jobs wait in LocalQueue queue for at most maxWait,
// holding a copy of the example echo Tool.
func admissionScope(ctx context.Context, queue string, maxWait time.Duration) string {
	GinkgoHelper()
	scope := "e2e-adm-" + rand.String(5)
	s := toolgatetest.MakeToolScope(scope, demoNS).Subjects("agent").Admission(queue, maxWait).Obj()
	metav1.SetMetaDataLabel(&s.ObjectMeta, e2eLabel, "true")
	Expect(admin.Create(ctx, s)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, s))).To(Succeed()) })
	var src toolgatev1alpha1.Tool
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: "echo"}, &src)).To(Succeed())
	t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: scope + "-echo", Namespace: demoNS}}
	t.Spec = *src.Spec.DeepCopy()
	// Named echo in the scope: it shadows the namespace layer's echo (the nearest
	// registration wins), whose requests are the defaults.
	t.Spec.Scope, t.Spec.Name = scope, "echo"
	// 500m each: the queue's quota (about 1.2 cores here) holds two at once, so a burst
	// waits whatever the machine's speed.
	if t.Spec.Body.Resources.Requests == nil {
		t.Spec.Body.Resources.Requests = corev1.ResourceList{}
	}
	t.Spec.Body.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
	createTool(ctx, t)
	return scope
}

var _ = Describe("bursts through Kueue: toolgate's Jobs wait for admission", Label("bursts", "kueue"), func() {
	It("runs a burst over the queue's quota to the end, every call Succeeded, its Jobs created suspended and labelled", Serial, func(ctx SpecContext) {
		scope := admissionScope(ctx, "toolgate", 5*time.Minute)
		// The quota (the node's, less what runs outside Jobs) holds two of these Jobs: 30 at
		// once must queue.
		const n = 30
		calls := make([]*toolgatev1alpha1.ToolCall, n)
		for i := range calls { // one after another: under a second for all 30
			calls[i] = createCall(ctx, "echo", scope, map[string]any{"text": fmt.Sprintf("burst %d", i)})
		}
		By("the Jobs are created suspended, labelled for queue toolgate; some wait, shown on their calls")
		sawWaiting := false
		Eventually(func(g Gomega) {
			for _, c := range calls {
				got := &toolgatev1alpha1.ToolCall{}
				g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
				if cond := meta.FindStatusCondition(got.Status.Conditions, toolgatev1alpha1.ConditionExecuted); cond != nil && cond.Reason == toolgatev1alpha1.ReasonWaitingForAdmission {
					sawWaiting = true
				}
				g.Expect(isTerminal(got.Status.Phase)).To(BeTrue(), "%s is %s", got.Name, got.Status.Phase)
			}
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		for _, c := range calls {
			succeeded(waitTerminal(ctx, c, callTimeout))
		}
		jobs := &batchv1.JobList{}
		Expect(admin.List(ctx, jobs, client.InNamespace(demoNS))).To(Succeed())
		names := map[string]bool{}
		for _, c := range calls {
			names[c.Name] = true
		}
		labelled, waited := 0, time.Duration(0)
		for _, j := range jobs.Items {
			if !names[j.Annotations[podcontract.AnnotationCallName]] {
				continue
			}
			if j.Labels["kueue.x-k8s.io/queue-name"] == "toolgate" {
				labelled++
			}
			if j.Status.StartTime != nil {
				waited = max(waited, j.Status.StartTime.Sub(j.CreationTimestamp.Time))
			}
		}
		Expect(labelled).To(Equal(n), "every Job of the burst was labelled for queue toolgate")
		// Two at a time: the last Jobs started (were admitted) seconds after their creation.
		Expect(waited).To(BeNumerically(">=", 3*time.Second), "a Job of the burst waited for admission")
		Expect(sawWaiting).To(BeTrue(), "a call of the burst showed WaitingForAdmission")
		AddReportEntry("bursts: longest wait for admission (Job created -> started); a call seen WaitingForAdmission",
			fmt.Sprintf("%s; %v", waited, sawWaiting))
	}, SpecTimeout(6*time.Minute))

	// Fair order (docs/bursts.md, "Fair shares"): two requesters, each in a requester group
	// capped at half of Cohort toolgate (one 500m Job at a time each). The first creates all
	// its calls before the second creates any; the completions still alternate: at no point
	// is one requester more than two calls ahead. One queue for both (creation order) puts
	// all of the first's calls ahead: 6 ahead.
	It("runs two requesters' bursts in turn, neither ever more than two calls ahead", Serial, func(ctx SpecContext) {
		requesterGroup(ctx, "e2e-fair-a", 2)
		requesterGroup(ctx, "e2e-fair-b", 2)
		scopeA := admissionScope(ctx, "e2e-fair-a", 5*time.Minute)
		scopeB := admissionScope(ctx, "e2e-fair-b", 5*time.Minute)
		other := impersonating(scopeServiceAccount(ctx, scopeB, "e2e-fair-"+rand.String(5)))
		const n = 6
		who := map[string]string{}
		var calls []*toolgatev1alpha1.ToolCall
		for _, r := range []struct {
			name, scope string
			c           client.Client
		}{{"a", scopeA, agent}, {"b", scopeB, other}} {
			for i := range n {
				c := issueAs(ctx, r.c, fmt.Sprintf("e2e-fair-%s-%s-%d", r.name, rand.String(4), i), r.scope, "", "echo", map[string]any{"text": "fair"})
				who[c.Name] = r.name
				calls = append(calls, c)
			}
		}
		var order []string
		done := map[string]bool{}
		Eventually(func(g Gomega) {
			for _, c := range calls {
				got := &toolgatev1alpha1.ToolCall{}
				if done[c.Name] || admin.Get(ctx, client.ObjectKeyFromObject(c), got) != nil || !isTerminal(got.Status.Phase) {
					continue
				}
				done[c.Name] = true
				order = append(order, who[c.Name])
			}
			g.Expect(order).To(HaveLen(2 * n))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		for _, c := range calls {
			succeeded(waitTerminal(ctx, c, callTimeout))
		}
		a, ahead := 0, 0
		for i, r := range order {
			if r == "a" {
				a++
			}
			ahead = max(ahead, a-(i+1-a), (i+1-a)-a)
		}
		AddReportEntry("bursts: completion order of two capped requester groups", fmt.Sprint(order))
		Expect(ahead).To(BeNumerically("<=", 2), "completion order %v", order)
	}, SpecTimeout(6*time.Minute))

	It("ends a call whose Job no queue admits NotAdmitted at its bound, never DeadlineExceeded", func(ctx SpecContext) {
		scope := admissionScope(ctx, "nobody-serves-this", 5*time.Second)
		call := createCall(ctx, "echo", scope, map[string]any{"text": "never"})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed), toolgatetest.Explain(got))
		Expect(got.Status.Result.Reason).To(Equal(toolgatev1alpha1.ReasonNotAdmitted))
		pods := podsOf(ctx, got)
		Expect(pods).To(BeEmpty(), "no Pod ever started")
	}, SpecTimeout(2*time.Minute))
})
