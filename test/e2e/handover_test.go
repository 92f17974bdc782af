package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Issue 34, item 5 on real Pods: no call is lost at a hand-over. The operator is started
// with the test-only hook --test-hold-before-job-create (the chart value
// testHooks.holdBeforeJobCreate, set by this spec for its run and removed after it), which
// holds the Job create of calls labelled toolgate.dev/test-hold between the attempt's status
// write and the create. During a burst through Kueue the leader is deleted (graceful, then
// the next one forced) while a held call's attempt is recorded and its Job absent; the new
// leader must create that Job (a Job truly absent was never created: jobexec's Observe),
// once. docs/high-availability.md.

// handoverHold is how long the hook holds a labelled call's Job create (in each replica
// that leads while the call waits): wide enough to see the window and delete the leader.
const handoverHold = "20s"

// setTestHold upgrades the release with testHooks.holdBeforeJobCreate=hold ("" turns the
// hook off) and waits until the rolled operator is available again.
func setTestHold(ctx context.Context, hold string) {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", "helm"), "upgrade", release, filepath.Join(root, "charts", release),
		"--kubeconfig", adminCfg, "--namespace", systemNS, "--skip-crds", "--reuse-values", "--wait", "--timeout", "3m",
		"--set-string", "testHooks.holdBeforeJobCreate="+hold)
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "helm upgrade: %s", out)
	waitOperatorAvailableWithin(ctx, 3*time.Minute)
}

// createHeldCall is createCall with the hook's label: its Job create is held.
func createHeldCall(ctx context.Context, scope string, args any) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	call := toolgatetest.MakeToolCall("", demoNS).Tool("echo").Scope(scope).Requester("agent").
		Args(args).Label(e2eLabel, "true").Label(podcontract.LabelTestHold, "true").Obj()
	call.GenerateName = "e2e-held-"
	Expect(agent.Create(ctx, call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
	return call
}

// inTheWindow: the call's attempt is recorded (its Job named in status) and that Job does
// not exist: the operator is between the status write and the create.
func inTheWindow(ctx context.Context, call *toolgatev1alpha1.ToolCall) (bool, error) {
	got := &toolgatev1alpha1.ToolCall{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(call), got); err != nil || got.Status.Job == nil {
		return false, err
	}
	err := admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: got.Status.Job.Name}, &batchv1.Job{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// toolStarted: the Pod's tool container ran (running, or terminated after it started).
func toolStarted(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == podcontract.ToolContainerName &&
			(cs.State.Running != nil || (cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero())) {
			return true
		}
	}
	return false
}

var _ = Describe("hand-over during a burst", Label("handover", "disruptive", "bursts"), Serial, func() {
	It("loses no call when the leader is deleted (gracefully, then forced) between an attempt's status write and its Job create: one Job, one Pod start per attempt", func(ctx SpecContext) {
		By("the operator started with the test hook (" + handoverHold + ")")
		setTestHold(ctx, handoverHold)
		DeferCleanup(func(ctx SpecContext) { setTestHold(ctx, "") }, NodeTimeout(4*time.Minute))
		scope := admissionScope(ctx, "toolgate", 4*time.Minute)

		By("a burst of 16 calls, every fourth one held before its Job create")
		var calls, held []*toolgatev1alpha1.ToolCall
		for i := range 16 {
			if i%4 == 0 {
				c := createHeldCall(ctx, scope, map[string]any{"text": fmt.Sprintf("held %d", i)})
				calls, held = append(calls, c), append(held, c)
				continue
			}
			calls = append(calls, createCall(ctx, "echo", scope, map[string]any{"text": fmt.Sprintf("burst %d", i)}))
		}

		// Graceful first (the Lease released), then forced on the leader that took over: it
		// holds the same calls again after its takeover, so they are in the window again.
		var inWindow []*toolgatev1alpha1.ToolCall
		var faultAt time.Time
		previous := ""
		for _, force := range []bool{false, true} {
			By(fmt.Sprintf("a held call's attempt recorded, its Job not created: the leader is deleted (force %t)", force))
			Eventually(func(g Gomega) {
				pod, err := leaderPod(ctx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pod.Name).NotTo(Equal(previous), "a new leader after the last fault")
				inWindow = inWindow[:0]
				for _, c := range held {
					in, err := inTheWindow(ctx, c)
					g.Expect(err).NotTo(HaveOccurred())
					if in {
						inWindow = append(inWindow, c)
					}
				}
				g.Expect(inWindow).NotTo(BeEmpty(), "a held call between its status write and its Job create")
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed())
			leader, err := deleteLeaderPod(ctx, force)
			Expect(err).NotTo(HaveOccurred())
			faultAt, previous = time.Now(), leader
			AddReportEntry("handover", fmt.Sprintf("leader %s deleted (force %t) with %d held call(s) in the window", leader, force, len(inWindow)))
		}

		By("every call Succeeded")
		for _, c := range calls {
			succeeded(waitTerminal(ctx, c, 4*time.Minute))
		}

		By("exactly one Job per attempt, one Pod start per attempt; the windowed calls' Jobs made after the last fault")
		for _, c := range calls {
			got := &toolgatev1alpha1.ToolCall{}
			Expect(admin.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
			var jobs batchv1.JobList
			Expect(admin.List(ctx, &jobs, client.InNamespace(demoNS), client.MatchingLabels{podcontract.LabelCall: c.Name})).To(Succeed())
			jobsPer, startsPer := map[string]int{}, map[string]int{}
			for _, j := range jobs.Items {
				jobsPer[j.Labels[podcontract.LabelAttempt]]++
			}
			for _, p := range podsOf(ctx, got) {
				if toolStarted(&p) {
					startsPer[p.Labels[podcontract.LabelAttempt]]++
				}
			}
			Expect(got.Status.Attempts).NotTo(BeEmpty(), c.Name)
			for _, a := range got.Status.Attempts {
				n := fmt.Sprint(a.Attempt)
				Expect(jobsPer[n]).To(Equal(1), "Jobs of %s attempt %s", c.Name, n)
				Expect(startsPer[n]).To(Equal(1), "Pod starts of %s attempt %s", c.Name, n)
			}
			Expect(jobsPer).To(HaveLen(len(got.Status.Attempts)), "no Job of an attempt %s did not record", c.Name)
		}
		for _, c := range inWindow {
			var job batchv1.Job
			got := &toolgatev1alpha1.ToolCall{}
			Expect(admin.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: got.Status.Attempts[0].JobName}, &job)).To(Succeed())
			// After the fault by a whole second at least (creationTimestamp is whole seconds): the
			// new leader took over and then held the create too, so it is tens of seconds; a Job
			// the deleted leader had created (the window not held) would be before the fault.
			Expect(job.CreationTimestamp.Time).To(BeTemporally(">", faultAt),
				"%s's Job was created by a leader after the fault (the deleted one was still holding)", c.Name)
		}
	}, SpecTimeout(12*time.Minute))
})
