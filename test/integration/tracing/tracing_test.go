package tracing_test

import (
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/internal/tracing"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
	callerTP      = "00-" + callerTraceID + "-" + callerSpanID + "-01"
	// secret is in every call's arguments: no span may carry it.
	secret = "s3cret-argument-text"
)

// startTraced starts the operator with an in-memory exporter of its own.
func startTraced(opts ManagerOptions) (*Manager, *tracetest.InMemoryExporter) {
	GinkgoHelper()
	exp := tracetest.NewInMemoryExporter()
	opts.TraceExporter = exp
	m := suite.StartManager(env, opts)
	return m, exp
}

func tracedCall(name, ns, tool, requester string) *v1alpha1.ToolCall {
	c := MakeToolCall(name, ns).Tool(tool).Requester(requester).Args(map[string]any{"text": secret}).Obj()
	c.Annotations = map[string]string{v1alpha1.AnnotationTraceparent: callerTP}
	return c
}

// spansOf are the exported spans of the call's trace (its trace ID and its UID).
func spansOf(exp *tracetest.InMemoryExporter, call *v1alpha1.ToolCall) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == tracing.AttrCallUID && a.Value.AsString() == string(call.UID) {
				out = append(out, s)
			}
		}
	}
	return out
}

func names(spans tracetest.SpanStubs) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	slices.Sort(n)
	return n
}

func byName(spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	GinkgoHelper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	Fail("no span " + name + " among " + strings.Join(names(spans), ", "))
	return tracetest.SpanStub{}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// expectOneTree checks the shape every call's trace has: the caller's trace, the root span
// under the caller's span, every other span under the root and inside it, no span twice,
// and no argument content anywhere.
func expectOneTree(spans tracetest.SpanStubs, call *v1alpha1.ToolCall) tracetest.SpanStub {
	GinkgoHelper()
	root := byName(spans, tracing.SpanCall)
	Expect(root.Parent.SpanID().String()).To(Equal(callerSpanID))
	Expect(root.Parent.IsRemote()).To(BeTrue())
	seen := map[trace.SpanID]bool{}
	for _, s := range spans {
		Expect(s.SpanContext.TraceID().String()).To(Equal(callerTraceID), s.Name)
		Expect(seen[s.SpanContext.SpanID()]).To(BeFalse(), "span %s exported twice", s.Name)
		seen[s.SpanContext.SpanID()] = true
		for _, a := range s.Attributes {
			Expect(a.Value.String()).NotTo(ContainSubstring(secret), "span %s attribute %s", s.Name, a.Key)
		}
		if s.Name == tracing.SpanCall {
			continue
		}
		Expect(s.Parent.SpanID()).To(Equal(root.SpanContext.SpanID()), s.Name)
		Expect(s.StartTime).NotTo(BeTemporally("<", root.StartTime), s.Name)
		Expect(s.EndTime).NotTo(BeTemporally(">", root.EndTime), s.Name)
		Expect(s.EndTime).NotTo(BeTemporally("<", s.StartTime), s.Name)
	}
	Expect(attr(root, string(tracing.AttrPhase))).To(Equal(string(call.Status.Phase)))
	return root
}

// jobTraceparent is the TRACEPARENT the operator put in the attempt's Job.
func jobTraceparent(ctx SpecContext, ns, name string, attempt int32) string {
	GinkgoHelper()
	tp, err := readJobTraceparent(ctx, ns, name, attempt)
	Expect(err).NotTo(HaveOccurred())
	return tp
}

func readJobTraceparent(ctx SpecContext, ns, name string, attempt int32) (string, error) {
	job := &batchv1.Job{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName(name, attempt)}, job); err != nil {
		return "", err
	}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env { // the signer's: it hands TRACEPARENT to the body
		if e.Name == v1alpha1.EnvTraceparent {
			return e.Value, nil
		}
	}
	return "", nil
}

var _ = Describe("A traced call", Label("tracing"), func() {
	It("is one trace under the caller's span: a span per stage, the body's TRACEPARENT the execution span", func(ctx SpecContext) {
		m, exp := startTraced(ManagerOptions{})
		DeferCleanup(m.Stop)
		ns := suite.NewNamespace(ctx, env, "trace")
		create(ctx, echoTool(ns).Obj(), tracedCall("hello", ns, "echo", AdminUser))
		call := waitPhase(ctx, ns, "hello", true, "")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded))

		var spans tracetest.SpanStubs
		Eventually(func() []string { spans = spansOf(exp, call); return names(spans) }).Should(Equal([]string{
			tracing.SpanExecute, tracing.SpanFreeze, tracing.SpanFreezeResult, tracing.SpanGuard, tracing.SpanJobStart,
			tracing.SpanNormalize, tracing.SpanPostExecute, tracing.SpanPreExecute, tracing.SpanResolve,
			tracing.SpanCall, tracing.SpanValidate}))
		expectOneTree(spans, call)
		exec := byName(spans, tracing.SpanExecute)
		Expect(attr(exec, string(tracing.AttrAttempt))).To(Equal("1"))
		Expect(attr(exec, string(tracing.AttrJob))).To(Equal(podspec.JobName("hello", 1)))
		Expect(exec.Status.Code).To(Equal(codes.Unset))
		tp := tracing.ParseTraceparent(jobTraceparent(ctx, ns, "hello", 1))
		Expect(tp.SpanID()).To(Equal(exec.SpanContext.SpanID()), "the body's TRACEPARENT names the execution span")
		Expect(tp.TraceID().String()).To(Equal(callerTraceID))
		Expect(attr(byName(spans, tracing.SpanGuard), string(tracing.AttrVerdict))).To(Equal("Allow"))
	})

	It("hands a warm Pod's body the execution span in its handover, as a cold Job's TRACEPARENT", Label("warm"), func(ctx SpecContext) {
		m, exp := startTraced(ManagerOptions{})
		DeferCleanup(m.Stop)
		ns := suite.NewNamespace(ctx, env, "trace")
		create(ctx, echoTool(ns).WarmPool(1, 0).Obj())
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns), client.HasLabels{podcontract.LabelPool})).To(Succeed())
			g.Expect(pods.Items).To(ContainElement(HaveField("Status.Conditions", ContainElement(HaveField("Type", corev1.PodReady)))))
		}).WithContext(ctx).Should(Succeed())
		create(ctx, tracedCall("warm", ns, "echo", AdminUser))
		call := waitPhase(ctx, ns, "warm", true, "")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded))
		Expect(call.Status.Attempts[0].Path).To(Equal(v1alpha1.PathWarm))
		var exec tracetest.SpanStub
		Eventually(func() []string { return names(spansOf(exp, call)) }).Should(ContainElement(tracing.SpanExecute))
		exec = byName(spansOf(exp, call), tracing.SpanExecute)
		var handed string
		for _, h := range m.Kubelet.Handovers() {
			if h.CallUID == call.UID {
				handed = h.Traceparent
			}
		}
		tp := tracing.ParseTraceparent(handed)
		Expect(tp.SpanID()).To(Equal(exec.SpanContext.SpanID()), "the handover's traceparent %q names the execution span", handed)
		Expect(tp.TraceID().String()).To(Equal(callerTraceID))
	})

	It("shows the approval wait, and a denial as an error without execution", func(ctx SpecContext) {
		m, exp := startTraced(ManagerOptions{})
		DeferCleanup(m.Stop)
		ns := suite.NewNamespace(ctx, env, "trace")
		agent, err := env.AddUser("agent", []string{EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
		create(ctx, echoTool(ns).Obj(), MakeTool("blocked", ns).Image("example/echo:1").Command("/echo").Obj(),
			MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).Tools("echo").
				VerdictRule("ask", "true", v1alpha1.VerdictAsk).Obj(),
			MakeToolPolicy("deny", ns).Stage(v1alpha1.StagePreExecute).Tools("blocked").
				VerdictRule("deny", "true", v1alpha1.VerdictDeny).Obj())
		Expect(agent.Create(ctx, tracedCall("asked", ns, "echo", "agent"))).To(Succeed())
		Expect(agent.Create(ctx, tracedCall("refused", ns, "blocked", "agent"))).To(Succeed())

		parked := waitPhase(ctx, ns, "asked", false, v1alpha1.PhaseAwaitingApproval)
		Eventually(func() []string { return names(spansOf(exp, parked)) }).Should(ContainElement(tracing.SpanPreExecute),
			"the admission's spans go out with the admission's write")
		Expect(env.Client.Create(ctx, MakeToolCallApproval("asked", ns).For(parked).Obj())).To(Succeed())
		asked := waitPhase(ctx, ns, "asked", true, "")
		Expect(asked).To(HavePhase(v1alpha1.PhaseSucceeded))
		var spans tracetest.SpanStubs
		Eventually(func() []string { spans = spansOf(exp, asked); return names(spans) }).Should(ContainElements(
			tracing.SpanApproval, tracing.SpanExecute, tracing.SpanCall))
		expectOneTree(spans, asked)
		Expect(attr(byName(spans, tracing.SpanPreExecute), string(tracing.AttrVerdict))).To(Equal("Ask"))
		Expect(attr(byName(spans, tracing.SpanApproval), string(tracing.AttrVerdict))).To(Equal("Allow"))

		refused := waitPhase(ctx, ns, "refused", true, "")
		Expect(refused).To(HavePhase(v1alpha1.PhaseDenied))
		Eventually(func() []string { spans = spansOf(exp, refused); return names(spans) }).Should(Equal([]string{
			tracing.SpanFreeze, tracing.SpanPreExecute, tracing.SpanResolve, tracing.SpanCall, tracing.SpanValidate}))
		root := expectOneTree(spans, refused)
		Expect(root.Status.Code).To(Equal(codes.Error))
		Expect(attr(root, string(tracing.AttrReason))).To(Equal(string(v1alpha1.ReasonPolicyDenied)))
		Expect(byName(spans, tracing.SpanPreExecute).Status.Code).To(Equal(codes.Error))
	})

	It("stays one trace when the operator restarts while the body runs", func(ctx SpecContext) {
		k := NewKubelet(nil)
		sim, err := env.StartKubelet(k)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(sim.Stop)
		k.Script("report", Outcome{Hold: true})
		first, exp1 := startTraced(ManagerOptions{Kubelet: k, KubeletRunsApart: true})
		ns := suite.NewNamespace(ctx, env, "trace")
		create(ctx, MakeTool("report", ns).Image("example/report:1").Command("/report").Obj(),
			tracedCall("restarted", ns, "report", AdminUser))
		running := waitPhase(ctx, ns, "restarted", false, v1alpha1.PhaseRunning)
		Eventually(func() []string { return names(spansOf(exp1, running)) }).Should(ContainElement(tracing.SpanGuard))
		tp := ""
		Eventually(func() (string, error) {
			var err error
			tp, err = readJobTraceparent(ctx, ns, "restarted", 1)
			return tp, err
		}).ShouldNot(BeEmpty())
		Expect(first.Stop()).To(Succeed())

		second, exp2 := startTraced(ManagerOptions{Kubelet: k, KubeletRunsApart: true})
		DeferCleanup(second.Stop)
		Eventually(func() error {
			return k.Finish(ctx, ns, podspec.JobName("restarted", 1), Outcome{Stdout: []byte(`{"ok":1}`)})
		}).Should(Succeed())
		done := waitPhase(ctx, ns, "restarted", true, "")
		Expect(done).To(HavePhase(v1alpha1.PhaseSucceeded))

		var after tracetest.SpanStubs
		Eventually(func() []string { after = spansOf(exp2, done); return names(after) }).Should(ContainElements(
			tracing.SpanExecute, tracing.SpanCall))
		Expect(names(after)).NotTo(ContainElement(tracing.SpanFreeze), "the new operator does not admit again")
		all := append(spansOf(exp1, done), after...)
		expectOneTree(all, done)
		Expect(tracing.ParseTraceparent(tp).SpanID()).To(Equal(byName(after, tracing.SpanExecute).SpanContext.SpanID()),
			"the body's TRACEPARENT, set by the first operator, names the span the second one exported")
	})

	It("puts no TRACEPARENT in the Job without a tracer", func(ctx SpecContext) {
		m := suite.StartManager(env, ManagerOptions{})
		DeferCleanup(m.Stop)
		ns := suite.NewNamespace(ctx, env, "trace")
		create(ctx, echoTool(ns).Obj(), tracedCall("plain", ns, "echo", AdminUser))
		Expect(waitPhase(ctx, ns, "plain", true, "")).To(HavePhase(v1alpha1.PhaseSucceeded))
		Expect(jobTraceparent(ctx, ns, "plain", 1)).To(BeEmpty())
	})
})
