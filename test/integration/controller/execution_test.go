package controller_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// runScripted registers a tool whose simulated body behaves as o, calls it and returns the
// terminal call.
func runScripted(ctx SpecContext, tool string, o Outcome, mutate ...func(*ToolWrapper)) *v1alpha1.ToolCall {
	ns := newNamespace(ctx)
	w := MakeTool(tool, ns).Image("example/" + tool + ":1").Command("/" + tool)
	for _, m := range mutate {
		m(w)
	}
	kubelet.Script(tool, o)
	create(ctx, w.Obj(), MakeToolCall("c", ns).Tool(tool).Requester(AdminUser).Args(map[string]any{"n": 1}).Obj())
	return waitTerminal(ctx, ns, "c")
}

func expectFailure(call *v1alpha1.ToolCall, reason string) {
	ExpectWithOffset(1, call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
	ExpectWithOffset(1, call.Status.Result.IsError).To(BeTrue())
	ExpectWithOffset(1, call.Status.Result.Reason).To(Equal(reason), explain(call))
	ExpectWithOffset(1, call).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionFalse, reason))
	ExpectWithOffset(1, call).To(HaveCondition(v1alpha1.ConditionCompleted, metav1.ConditionTrue, "Failed"))
}

var _ = Describe("A body that fails", Label("execution"), func() {
	It("exiting non-zero ends as isError NonZeroExit with its stderr", func(ctx SpecContext) {
		call := runScripted(ctx, "exit3", Outcome{ExitCode: 3, Stderr: "no such file"})
		expectFailure(call, "NonZeroExit")
		Expect(call.Status.Result.Error).To(ContainSubstring("no such file"))
	})

	It("past its deadline ends as isError DeadlineExceeded, with no host settings in the result", func(ctx SpecContext) {
		call := runScripted(ctx, "slow", Outcome{DeadlineExceeded: true}, func(w *ToolWrapper) { w.Timeout(7 * 60e9) })
		expectFailure(call, "DeadlineExceeded")
		raw, err := json.Marshal(call.Status.Result)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring("420"), "the timeout must not reach the model")
		Expect(string(raw)).NotTo(ContainSubstring("example/slow"), "the image must not reach the model")
	})

	It("killed for memory ends as isError OOMKilled", func(ctx SpecContext) {
		call := runScripted(ctx, "hog", Outcome{ExitCode: 137, Reason: "OOMKilled", Signal: "SIGKILL", NoFrame: true})
		expectFailure(call, "OOMKilled")
	})

	It("whose image is never pulled ends as isError ImageNeverStarted, and its Job is removed", func(ctx SpecContext) {
		call := runScripted(ctx, "ghost", Outcome{Waiting: "ErrImageNeverPull"})
		expectFailure(call, "ImageNeverStarted")
		Eventually(func(g Gomega) {
			job := &batchv1.Job{}
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: call.Namespace, Name: podspec.JobName("c", 1)}, job)
			g.Expect(err != nil || !job.DeletionTimestamp.IsZero()).To(BeTrue(), "the Job is deleted")
		}).WithContext(ctx).Should(Succeed())
	})

	It("evicted ends as isError Evicted", func(ctx SpecContext) {
		expectFailure(runScripted(ctx, "evictee", Outcome{Evicted: true}), "Evicted")
	})

	It("whose Job is deleted mid-run ends as isError JobDeleted, and the Job is released", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("held", Outcome{Hold: true})
		create(ctx, MakeTool("held", ns).Image("example/held:1").Command("/held").Obj(),
			MakeToolCall("c", ns).Tool("held").Requester(AdminUser).Args(map[string]any{}).Obj())
		job := &batchv1.Job{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)).To(Succeed())
			g.Expect(job.Status.Active).To(BeNumerically("==", 1))
		}).WithContext(ctx).Should(Succeed())
		// Background propagation, as kubectl deletes (a Job's API default, orphan, needs the
		// garbage collector, which envtest does not run).
		Expect(k8sClient.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		expectFailure(waitTerminal(ctx, ns, "c"), "JobDeleted")
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job)
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound), "the finalizer is removed and the Job goes away")
	})
})

var _ = Describe("A body's output", Label("execution", "output"), func() {
	It("over the limit is reported as OutputTooLarge, never silently cut", func(ctx SpecContext) {
		big := []byte(strings.Repeat("x", 3000))
		call := runScripted(ctx, "chatty", Outcome{Stdout: big}, func(w *ToolWrapper) { w.MaxOutputBytes(1000) })
		Expect(call.Status.Result.IsError).To(BeTrue(), explain(call))
		Expect(call.Status.Result.Reason).To(Equal("OutputTooLarge"))
		Expect(call.Status.Result.Meta).To(HaveKeyWithValue("truncated", "true"))
	})

	It("beyond the termination message travels through the log, intact", func(ctx SpecContext) {
		lines := make([]string, 0, 4000)
		for i := range 4000 {
			lines = append(lines, strings.Repeat(string(rune('a'+i%26)), 1+i%7)+"-"+strings.Repeat("z", i%13))
		}
		body := strings.Join(lines, "\n")
		call := runScripted(ctx, "large", Outcome{Stdout: []byte(body)})
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		var content string
		Expect(json.Unmarshal(call.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(Equal(body))
	})

	// The API server re-encodes a custom resource's numbers (1.0 as 1, 1E+2 as 100, an
	// integer beyond int64 as a float64): the operator stores the content in that form in
	// its one encoding, so the result read back has the digest it was written with.
	It("whose numbers the API server re-encodes reads back with the digest it was written with", func(ctx SpecContext) {
		out := `{"one":1.0,"exp":1E+2,"big":123456789012345678901234567890,"neg":-0,"tiny":1e-7,"s":"<&>"}`
		call := runScripted(ctx, "numbers", Outcome{Stdout: []byte(out)})
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(string(call.Status.Result.Content.Raw)).To(Equal(
			`{"big":1.2345678901234568e+29,"exp":100,"neg":0,"one":1,"s":"\u003c\u0026\u003e","tiny":1e-7}`), "the API server's form")
		Expect(StoredResultDigest(call)).To(Equal(call.Status.ResultDigest), "the result read back freezes to its digest")
	})

	It("that is not UTF-8 is isError OutputNotUTF8", func(ctx SpecContext) {
		call := runScripted(ctx, "binary", Outcome{Stdout: []byte{0xff, 0xfe, 'a'}})
		Expect(call.Status.Result.Reason).To(Equal("OutputNotUTF8"), explain(call))
	})
})
