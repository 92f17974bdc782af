package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// startOfASecond waits until just after a wall-clock second begins, so that the calls
// created next share their creationTimestamp (1 s resolution).
func startOfASecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 20*time.Millisecond).Sub(now))
}

// getCall reads a call from the API server.
func getCall(ctx SpecContext, g Gomega, ns, name string) *v1alpha1.ToolCall {
	c := &v1alpha1.ToolCall{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
	return c
}

var _ = Describe("Calls of one session run in the order they were issued", Label("session", "session-order"), func() {
	It("orders calls created within one second by issue, not by name", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("order-writer", Outcome{Hold: true})
		kubelet.Script("order-reader", Outcome{Hold: true})
		create(ctx, MakeTool("order-writer", ns).Image("example/w:1").Command("/w").Obj(),
			MakeTool("order-reader", ns).Image("example/r:1").Command("/r").ConcurrencySafe(true).Obj())
		call := func(name, tool string) *v1alpha1.ToolCall {
			return MakeToolCall(name, ns).Tool(tool).Session("s").Requester(AdminUser).Args(map[string]any{}).Obj()
		}
		// Issued in this order, named against it: by name the read would come first.
		startOfASecond()
		create(ctx, call("z-write", "order-writer"), call("m-sh", "order-writer"), call("a-read", "order-reader"))
		var created []string
		for _, name := range []string{"z-write", "m-sh", "a-read"} {
			created = append(created, getCall(ctx, Default, ns, name).CreationTimestamp.UTC().String())
		}
		Expect(created).To(HaveEach(created[0]), "the three calls are created within one second")

		startsNext(ctx, ns, "z-write")
		Eventually(func(g Gomega) {
			g.Expect(getCall(ctx, g, ns, "m-sh")).To(HavePhase(v1alpha1.PhaseQueued))
			g.Expect(getCall(ctx, g, ns, "a-read")).To(HavePhase(v1alpha1.PhaseQueued))
		}).WithContext(ctx).Should(Succeed())
		for _, name := range []string{"z-write", "m-sh", "a-read"} {
			Expect(getCall(ctx, Default, ns, name).Status.IssuedRevision).NotTo(BeEmpty(), "%s's order is recorded", name)
		}

		endHeld(ctx, ns, "z-write")
		startsNext(ctx, ns, "m-sh")
		staysQueued(ctx, ns, "a-read", "the read waits for the barrier issued before it")

		endHeld(ctx, ns, "m-sh")
		startsNext(ctx, ns, "a-read")
		endHeld(ctx, ns, "a-read")
	})

	It("never makes one requester wait on another's barrier with the same session name", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		robot := bindShippedRole(ctx, ns, AgentRole, "robot")
		mallory := bindShippedRole(ctx, ns, AgentRole, "mallory")
		kubelet.Script("order-long", Outcome{Hold: true})
		create(ctx, MakeTool("order-long", ns).Image("example/long:1").Command("/long").Obj())
		call := func(name string) *v1alpha1.ToolCall {
			return MakeToolCall(name, ns).Tool("order-long").Session("shared").Args(map[string]any{}).Obj()
		}
		Expect(robot.Create(ctx, call("robot-1"))).To(Succeed())
		startsNext(ctx, ns, "robot-1")

		Expect(mallory.Create(ctx, call("mallory-1"))).To(Succeed())
		startsNext(ctx, ns, "mallory-1") // mallory's barrier starts while robot's runs
		Expect(getCall(ctx, Default, ns, "robot-1").Status.Phase.IsTerminal()).To(BeFalse(), "robot's barrier still runs")

		Expect(robot.Create(ctx, call("robot-2"))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getCall(ctx, g, ns, "robot-2")).To(HavePhase(v1alpha1.PhaseQueued))
		}).WithContext(ctx).Should(Succeed(), "robot's own next call waits for robot's barrier")

		endHeld(ctx, ns, "robot-1")
		startsNext(ctx, ns, "robot-2")
		endHeld(ctx, ns, "mallory-1")
		endHeld(ctx, ns, "robot-2")
	})
})
