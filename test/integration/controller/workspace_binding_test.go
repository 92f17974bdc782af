package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/controllers/workspace"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// A claim of a storage class that binds at once is Bound before its session's Pod exists:
// a kubelet that starts the Pod meanwhile backs off the mount for seconds (found on the
// local cluster, where it cost a session's first call its whole deadline).
var _ = Describe("Session workspaces of an Immediate storage class", Label("workspace"), Serial, func() {
	var ns, class string
	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		class = "immediate-" + ns
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "example.com/none",
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
		create(ctx, sc)
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, sc))).To(Succeed()) })
		kubelet.HoldClaims(true)
		DeferCleanup(func() { kubelet.HoldClaims(false) })
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).WorkspaceStorageClass(class).Obj(),
			MakeTool("write", ns).Image("example/write:1").Command("/write").Workspace(v1alpha1.WorkspaceReadWrite).Timeout(5*time.Second).Obj())
	})

	It("creates the Job only once the claim is Bound", func(ctx SpecContext) {
		create(ctx, fileCall("c", ns, "write", "coding", "s", "a", "b"))
		claim := workspace.ClaimName("coding", AdminUser, "s")
		Eventually(func(g Gomega) []string { return claims(ctx, g, ns) }).WithContext(ctx).Should(ContainElement(claim))
		Consistently(func(g Gomega) bool { return jobExists(ctx, g, ns, "c") }).WithContext(ctx).
			WithTimeout(ConsistentDuration).Should(BeFalse(), "no Job while the claim is Pending")

		kubelet.HoldClaims(false)
		pokeClaim(ctx, ns, claim)
		done := waitTerminal(ctx, ns, "c")
		Expect(done).To(HavePhase(v1alpha1.PhaseSucceeded), explain(done))
	})

	It("ends WorkspaceUnbound at the deadline, no Job ever created, when the claim never binds", func(ctx SpecContext) {
		call := fileCall("c", ns, "write", "coding", "s", "a", "b")
		create(ctx, call)
		Eventually(func(g Gomega) []string { return claims(ctx, g, ns) }).WithContext(ctx).
			Should(ContainElement(workspace.ClaimName("coding", AdminUser, "s")))
		fakeClock.Step(5*time.Second + controllers.DefaultCallOptions().Job.Allowance() + controllers.DefaultCallOptions().DeadlineGrace)
		poke(ctx, call)
		done := waitTerminal(ctx, ns, "c")
		expectFailure(done, v1alpha1.ReasonWorkspaceUnbound)
		Expect(jobExists(ctx, Default, ns, "c")).To(BeFalse())
		Expect(kubelet.PodStarts()).NotTo(ContainElement(And(HaveField("Namespace", ns), HaveField("Call", "c"))), "no body ever started")
	})
})
