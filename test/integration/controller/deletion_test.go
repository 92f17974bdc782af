package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/toolcall"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// A call deleted before it ended, by anyone, has its body stopped and leaves its audit
// records: the operator holds it (FinalizerRecord) until both are done.
var _ = Describe("A call deleted before it ended", Label("deletion", "audit"), Serial, func() {
	var audit *auditLog
	BeforeEach(func() {
		audit = &auditLog{}
		Expect(mgr.Stop()).To(Succeed())
		mgr = suite.StartManager(env, ManagerOptions{Clock: fakeClock, Kubelet: kubelet, CollectGarbage: true,
			AuditLogger: crzap.New(crzap.WriteTo(audit)).WithName(toolcall.AuditLoggerName)})
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			startManager()
		})
	})

	// recordsOf waits for the call to be gone and returns its audit records by message.
	recordsOf := func(ctx SpecContext, call *v1alpha1.ToolCall) map[string]map[string]any {
		GinkgoHelper()
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(call), &v1alpha1.ToolCall{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound), "the operator lets the call go")
		byMsg := map[string]map[string]any{}
		for _, msg := range []string{toolcall.AuditMessage, toolcall.AuditReleasedMessage} {
			if recs := audit.recordsWith(string(call.UID), msg); len(recs) > 0 {
				byMsg[msg] = recs[len(recs)-1]
			}
		}
		return byMsg
	}

	It("stops the running body and records the end before the call goes", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("long", Outcome{Hold: true})
		create(ctx, MakeTool("long", ns).Image("example/long:1").Command("/long").Obj())
		call := MakeToolCall("c", ns).Tool("long").Args(map[string]any{}).Obj()
		create(ctx, call)
		jobKey := client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}
		Eventually(func(g Gomega) {
			job := &batchv1.Job{}
			g.Expect(k8sClient.Get(ctx, jobKey, job)).To(Succeed())
			g.Expect(job.Status.Active).To(BeNumerically("==", 1), "the Pod runs")
		}).WithContext(ctx).Should(Succeed())
		live := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), live)).To(Succeed())
		Expect(live.Finalizers).To(ContainElement(v1alpha1.FinalizerRecord), "the operator holds every call")

		Expect(k8sClient.Delete(ctx, live)).To(Succeed(), "an admin deletes the running call")
		records := recordsOf(ctx, live)
		finished := records[toolcall.AuditMessage]
		Expect(finished).NotTo(BeNil(), "the end is recorded: %s", audit.text())
		Expect(finished).To(HaveKeyWithValue("reason", string(pipeline.ReasonDeleted)))
		Expect(finished).To(HaveKeyWithValue("phase", string(v1alpha1.PhaseFailed)))
		Expect(records).To(HaveKey(toolcall.AuditReleasedMessage), "and the release")
		Eventually(func() error {
			return k8sClient.Get(ctx, jobKey, &batchv1.Job{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound), "the body's Job is stopped and gone")
	})

	It("records a parked call deleted before it ran", func(ctx SpecContext) {
		_, parked := parkedCall(ctx, time.Hour)
		live := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(parked), live)).To(Succeed())
		Expect(k8sClient.Delete(ctx, live)).To(Succeed())
		records := recordsOf(ctx, live)
		Expect(records[toolcall.AuditMessage]).To(HaveKeyWithValue("reason", string(pipeline.ReasonDeleted)))
		Expect(records).To(HaveKey(toolcall.AuditReleasedMessage))
	})
})
