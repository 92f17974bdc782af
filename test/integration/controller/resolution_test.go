package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// resolvedTo runs a call of tool in scope and returns the object it resolved to.
func resolvedTo(ctx SpecContext, ns, name, tool, scope string) *v1alpha1.ToolCall {
	create(ctx, MakeToolCall(name, ns).Tool(tool).Scope(scope).Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
	return waitTerminal(ctx, ns, name)
}

var _ = Describe("Scoped resolution", Label("resolution"), func() {
	It("prefers the call's own scope, then its ancestors, then the namespace, then ClusterTools", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		cluster := MakeClusterTool("ct-" + ns).Name("lookup").Image("example/lookup:1").Command("/lookup").Obj()
		create(ctx, cluster,
			MakeToolScope("team", ns).Obj(),
			MakeToolScope("project", ns).Parent("team").Obj(),
			MakeTool("lookup-team", ns).Name("lookup").Scope("team").Image("example/lookup:1").Command("/lookup").Obj(),
			MakeTool("grep-ns", ns).Name("grep").Image("example/grep:1").Command("/grep").Obj(),
			MakeTool("own", ns).Name("own").Scope("project").Image("example/own:1").Command("/own").Obj())
		DeferCleanup(func(ctx SpecContext) { Expect(k8sClient.Delete(ctx, cluster)).To(Succeed()) })

		Expect(resolvedTo(ctx, ns, "c1", "own", "project").Status.Tool).To(HaveField("Name", "own"))
		Expect(resolvedTo(ctx, ns, "c2", "lookup", "project").Status.Tool).To(HaveField("Name", "lookup-team"), "ancestor before ClusterTool")
		Expect(resolvedTo(ctx, ns, "c3", "grep", "project").Status.Tool).To(HaveField("Name", "grep-ns"), "namespace layer")
		c4 := resolvedTo(ctx, ns, "c4", "lookup", "")
		Expect(c4.Status.Tool).To(And(HaveField("Kind", v1alpha1.ToolKindClusterTool), HaveField("Name", cluster.Name)))
		Expect(c4).To(HavePhase(v1alpha1.PhaseSucceeded), explain(c4))
		c5 := resolvedTo(ctx, ns, "c5", "own", "")
		Expect(c5.Status.Result.Reason).To(Equal("ToolNotFound"), "a scope's tools are invisible outside it")
	})

	It("applies every scope's restrictions on the chain: deny wins and a child only narrows", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(),
			MakeTool("sh", ns).Image("example/sh:1").Command("/sh").Obj(),
			MakeToolScope("parent", ns).Allow("echo").Obj(),
			MakeToolScope("child", ns).Parent("parent").Allow("echo", "sh").Obj(),
			MakeToolScope("denier", ns).Deny("echo").Obj())
		Expect(resolvedTo(ctx, ns, "ok", "echo", "child")).To(HavePhase(v1alpha1.PhaseSucceeded))
		Expect(resolvedTo(ctx, ns, "widen", "sh", "child").Status.Result.Reason).To(Equal("ToolRestricted"))
		Expect(resolvedTo(ctx, ns, "denied", "echo", "denier").Status.Result.Reason).To(Equal("ToolRestricted"))
		Expect(resolvedTo(ctx, ns, "missing", "nope", "child").Status.Result.Reason).To(Equal("ToolNotFound"))
	})

	It("denies a requester who is not a subject of the scope", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeToolScope("restricted", ns).Subjects("someone-else").Obj())
		call := resolvedTo(ctx, ns, "c", "echo", "restricted")
		Expect(call).To(HavePhase(v1alpha1.PhaseDenied), explain(call))
		Expect(call.Status.Result.Reason).To(Equal("NotASubject"))
	})

	It("refuses a call whose tool would not run under the RuntimeClass its scope chain requires", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		// Without the RuntimeClass the API server refuses the gVisor tool's Pod (the
		// RuntimeClass admission plugin), and its call would wait for its deadline.
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, rc))).To(Succeed())
		create(ctx, echoTool(ns).Obj(),
			MakeTool("sandboxed", ns).Name("sandboxed").Image("example/echo:1").Command("/echo").RuntimeClass("gvisor").Obj(),
			MakeToolScope("strict", ns).RuntimeClass("gvisor").Obj(),
			MakeToolScope("team", ns).Parent("strict").Obj())
		refused := resolvedTo(ctx, ns, "runc", "echo", "team")
		Expect(refused).To(HavePhase(v1alpha1.PhaseFailed), explain(refused))
		Expect(refused.Status.Result.Reason).To(Equal(v1alpha1.ReasonRuntimeClassRequired), "the parent's requirement holds below it")
		Expect(refused.Status.Result.Error).NotTo(ContainSubstring("gvisor"), "the model is not told the platform's configuration")
		Expect(refused.Status.Conditions).To(ContainElement(And(HaveField("Type", v1alpha1.ConditionResolved),
			HaveField("Status", metav1.ConditionFalse), HaveField("Message", ContainSubstring(`requires RuntimeClass "gvisor"`)))))
		Expect(refused.Status.Attempts).To(BeEmpty(), "no body ran")
		ran := resolvedTo(ctx, ns, "gvisor", "sandboxed", "team")
		Expect(ran).To(HavePhase(v1alpha1.PhaseSucceeded), explain(ran))
		Expect(resolvedTo(ctx, ns, "outside", "echo", "")).To(HavePhase(v1alpha1.PhaseSucceeded), "outside the scope nothing is required")
	})

	It("keeps the oldest of two tools with one name and marks the newer DuplicateName", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeTool("first", ns).Name("dup").Image("example/a:1").Command("/a").Obj())
		waitRegistered(ctx, ns, "first", metav1.ConditionTrue, "Registered")
		create(ctx, MakeTool("second", ns).Name("dup").Image("example/b:1").Command("/b").Obj())
		waitRegistered(ctx, ns, "second", metav1.ConditionFalse, "DuplicateName")
		Expect(resolvedTo(ctx, ns, "c", "dup", "").Status.Tool).To(HaveField("Name", "first"))

		Expect(k8sClient.Delete(ctx, &v1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}})).To(Succeed())
		waitRegistered(ctx, ns, "second", metav1.ConditionTrue, "Registered")
		Expect(resolvedTo(ctx, ns, "c2", "dup", "").Status.Tool).To(HaveField("Name", "second"), "deleting a tool unregisters it")
	})
})

var _ = Describe("Registration", Label("registration"), func() {
	It("reports a schema that does not compile, and fails calls of that tool as ToolNotReady", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeTool("broken", ns).Image("example/x:1").Command("/x").
			Parameters(map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": 12}}}).Obj())
		waitRegistered(ctx, ns, "broken", metav1.ConditionFalse, "SchemaInvalid")
		Expect(resolvedTo(ctx, ns, "c", "broken", "").Status.Result.Reason).To(Equal("ToolNotReady"))
	})

	It("reports scope cycles and unknown parents", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("a", ns).Parent("b").Obj(), MakeToolScope("b", ns).Parent("a").Obj(),
			MakeToolScope("orphan", ns).Parent("gone").Obj())
		for name, reason := range map[string]string{"a": "ScopeCycle", "b": "ScopeCycle", "orphan": "UnknownParent"} {
			Eventually(func(g Gomega) {
				s := &v1alpha1.ToolScope{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
				g.Expect(s.Status.Conditions).To(ContainElement(And(HaveField("Type", v1alpha1.ConditionReady),
					HaveField("Status", metav1.ConditionFalse), HaveField("Reason", reason))))
			}).WithContext(ctx).Should(Succeed())
		}
	})
})

func waitRegistered(ctx SpecContext, ns, name string, status metav1.ConditionStatus, reason string) {
	Eventually(func(g Gomega) {
		t := &v1alpha1.Tool{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, t)).To(Succeed())
		g.Expect(t.Status.Conditions).To(ContainElement(And(HaveField("Type", v1alpha1.ConditionRegistered),
			HaveField("Status", status), HaveField("Reason", reason))))
	}).WithContext(ctx).Should(Succeed())
}

var _ = Describe("A tool's presentation", Label("registration"), func() {
	It("that does not compile is reported PresentationInvalid", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeTool("shown", ns).Image("example/x:1").Command("/x").Presentation("'grep ' + ", "").Obj())
		waitRegistered(ctx, ns, "shown", metav1.ConditionFalse, "PresentationInvalid")
	})
})
