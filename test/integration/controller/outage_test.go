package controller_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

var _ = Describe("An operator outage longer than the old Job TTL", Label("restart", "retention"), func() {
	It("loses no finished result and runs the body once", func(ctx SpecContext) {
		// The Kubelet (and the TTL controller it plays) must keep running while the operator
		// is down: this spec runs its own pair instead of the suite's operator.
		Expect(mgr.Stop()).To(Succeed())
		DeferCleanup(startManager)
		k := NewKubelet(nil)
		sim, err := env.StartKubelet(k)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(sim.Stop)
		// A short retention, so that the operator's requeue for it comes soon; whether the
		// Job is due is decided on the fake clock.
		opts := ManagerOptions{Clock: fakeClock, Kubelet: k, KubeletRunsApart: true, Call: CallOptions{JobRetention: 2 * time.Second}}
		op := suite.StartManager(env, opts)
		DeferCleanup(func() error { return op.Stop() })

		ns := newNamespace(ctx)
		k.Script("report", Outcome{Hold: true})
		create(ctx, MakeTool("report", ns).Image("example/report:1").Command("/report").Retry(3, "JobDeleted").Obj(),
			MakeToolCall("c", ns).Tool("report").Requester(AdminUser).Args(map[string]any{}).Obj())
		key := client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}
		job := &batchv1.Job{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, job)).To(Succeed())
			g.Expect(job.Status.Active).To(BeNumerically("==", 1), "the Pod runs")
		}).WithContext(ctx).Should(Succeed())

		Expect(op.Stop()).To(Succeed()) // the operator goes down with the call running
		k.Script("report", Outcome{Stdout: []byte(`{"ran":"twice"}`)})
		Eventually(func() error {
			return k.Finish(ctx, ns, key.Name, Outcome{Stdout: []byte(`{"rows":42}`)})
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, key, job)).To(Succeed())
			g.Expect(job.Status.Succeeded).To(BeNumerically("==", 1), "the Job finished")
		}).WithContext(ctx).Should(Succeed())
		// Eleven minutes pass (the old ttlSecondsAfterFinished was 600 s) before it is back.
		fakeClock.Step(11 * time.Minute)
		Expect(k.ExpireFinishedJobs(ctx, ns, fakeClock.Now())).To(Succeed())

		op = suite.StartManager(env, opts)
		done := waitTerminal(ctx, ns, "c")
		Expect(done).To(HavePhase(v1alpha1.PhaseSucceeded), explain(done))
		var content any
		Expect(json.Unmarshal(done.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(Equal(map[string]any{"rows": float64(42)}), "the body's real result")
		Expect(done.Status.Attempts).To(HaveLen(1), explain(done))
		// This Kubelet plays every toolgate Job of the API server, among them any an earlier
		// spec left unstarted in its own namespace: count this call's Pods only.
		var started []PodStart
		for _, s := range k.PodStarts() {
			if s.Namespace == ns {
				started = append(started, s)
			}
		}
		Expect(started).To(HaveLen(1), "the body ran once")

		// The finished Job and its Pod stay for the retention (logs, describe), then the
		// operator deletes the Job and releases it.
		Expect(k8sClient.Get(ctx, key, job)).To(Succeed())
		Expect(job.DeletionTimestamp.IsZero()).To(BeTrue(), "kept for the retention")
		fakeClock.Step(3 * time.Second)
		Eventually(func() error { return k8sClient.Get(ctx, key, job) }).WithContext(ctx).
			Should(Satisfy(apierrors.IsNotFound), "deleted and released once the retention passed")
	})
})
