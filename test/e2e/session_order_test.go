package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Issue 32 §5 on real Pods: the calls of a session run in the order they were issued, even
// within one second; and a session is (scope, spec.session, requester): two identities
// using one session name never wait on each other.

// issueAs creates a named call of the session through c (requester: c's user), without
// waiting for it.
func issueAs(ctx context.Context, c client.Client, name, scope, session, tool string, args any) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	call := toolgatetest.MakeToolCall(name, demoNS).Tool(tool).Scope(scope).Session(session).
		Args(args).Label(e2eLabel, "true").Obj()
	Expect(c.Create(ctx, call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
	return call
}

var _ = Describe("the order of a session's calls", Label("session-order", "workspace"), func() {
	It("runs a read issued 200 ms after a slow write after it, in three rounds", func(ctx SpecContext) {
		scope := workspaceScope(ctx)
		for round := range 3 {
			session := "e2e-order-" + rand.String(8)
			// named against their order of issue: ordered by name, the read would run first
			prefix := "e2e-order-" + rand.String(5) + "-"
			issueAs(ctx, agent, prefix+"z-write", scope, session, "write_file", map[string]any{"path": "f", "content": "old\n"})
			issueAs(ctx, agent, prefix+"m-sh", scope, session, "sh", map[string]any{"command": "sleep 2; echo new > f"})
			// The agent's own pause between issuing the sh and the read (the reported run's
			// 200 ms): part of the scenario, not a wait for anything.
			time.Sleep(200 * time.Millisecond)
			read := issueAs(ctx, agent, prefix+"a-read", scope, session, "read_file", map[string]any{"path": "f"})
			got := succeeded(waitTerminal(ctx, read, callTimeout))
			Expect(content(got)["content"]).To(Equal("new\n"), "round %d: the read ran after the sh issued before it", round+1)
		}
	}, SpecTimeout(6*time.Minute))

	It("never makes one identity wait on another's barrier under the same session name", func(ctx SpecContext) {
		scope := workspaceScope(ctx)
		// The barrier's sh gets room: its 30 s timeout also covers its Pod's start-up, which
		// has taken more than 15 s under the suite's load; its sleep outlasts the other
		// identity's cold call.
		sh := &toolgatev1alpha1.Tool{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: scope + "-ws-sh"}, sh)).To(Succeed())
		sh.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
		Expect(admin.Update(ctx, sh)).To(Succeed())
		other := impersonating(scopeServiceAccount(ctx, scope, "e2e-order-"+rand.String(5)))
		session := "e2e-order-shared"
		long := issueAs(ctx, agent, "e2e-order-"+rand.String(5)+"-sleep", scope, session, "sh", map[string]any{"command": "sleep 30"})
		Eventually(func(g Gomega) {
			got := &toolgatev1alpha1.ToolCall{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(long), got)).To(Succeed())
			g.Expect(runningPod(ctx, g, got)).To(BeTrue(), "the agent's barrier runs")
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())

		list := issueAs(ctx, other, "e2e-order-"+rand.String(5)+"-list", scope, session, "list", map[string]any{})
		got := succeeded(waitTerminal(ctx, list, callTimeout))
		Expect(content(got)["entries"]).To(BeEmpty(), "the other identity's own, empty workspace")
		Expect(got.Spec.Requester).NotTo(Equal("agent"))
		still := &toolgatev1alpha1.ToolCall{}
		Expect(admin.Get(ctx, client.ObjectKeyFromObject(long), still)).To(Succeed())
		Expect(isTerminal(still.Status.Phase)).To(BeFalse(), "the other identity's call ended while the agent's barrier still ran")
		succeeded(waitTerminal(ctx, long, callTimeout))
	}, SpecTimeout(4*time.Minute))
})
