package catalogue_test

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/toolgate/toolgate/api/v1alpha1"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// The table runs in order, each row in a namespace of its own; after the last row the
// operator must still be healthy.
var _ = Describe("The adversarial catalogue", Ordered, ContinueOnFailure, Label("catalogue"), func() {
	var panicsBefore float64
	BeforeAll(func() {
		checkTable(cases)
		panicsBefore = reconcilePanics()
	})

	entries := make([]TableEntry, 0, len(cases))
	for _, r := range cases {
		entries = append(entries, Entry(fmt.Sprintf("%s [%s] %s", r.id, r.category, r.hostile), r))
	}
	DescribeTable("a hostile input ends as it must", runRow, entries)

	It("leaves the operator healthy: no reconciler panicked, and a plain call still succeeds", func(ctx SpecContext) {
		Expect(reconcilePanics()).To(Equal(panicsBefore), "controller_runtime_reconcile_panics_total rose during the table")
		ns := suite.NewNamespace(ctx, env, "healthy")
		Expect(k8sClient.Create(ctx, tg.MakeTool("echo", ns).Image("example/echo:1").Command("/echo").Obj())).To(Succeed())
		start := time.Now()
		Expect(k8sClient.Create(ctx, tg.MakeToolCall("after", ns).Args(map[string]any{"text": "still here"}).Obj())).To(Succeed())
		call := waitTerminal(ctx, ns, "after")
		Expect(call).To(tg.HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Result.Content.Raw).To(MatchJSON(`{"text":"still here"}`))
		AddReportEntry("plain call after the table", time.Since(start).Round(time.Millisecond).String())
	})
})

// runRow sets a row up in a fresh namespace, makes its call and checks its outcome.
func runRow(ctx SpecContext, r row) {
	ns := suite.NewNamespace(ctx, env, "cat")
	setUp(ctx, ns, r)
	err := postCall(ctx, r.caller(), ns, r.query, callBody(ns, r))
	if r.want.refused != "" {
		expectRefused(err, r.want.refused, r.want.message)
		Consistently(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name()}, &v1alpha1.ToolCall{}))
		}).WithContext(ctx).WithTimeout(200*time.Millisecond).Should(BeTrue(), "nothing was created")
		return
	}
	Expect(err).NotTo(HaveOccurred(), "the call's create")
	if r.approval != nil {
		answerParked(ctx, ns, r)
	}
	if r.advance > 0 {
		advanceUntilTerminal(ctx, ns, r)
	}
	expectOutcome(waitTerminal(ctx, ns, r.name()), r.want)
}

// setUp creates the row's Tool and objects and scripts its Pods.
func setUp(ctx SpecContext, ns string, r row) {
	if !r.noTool {
		w := tg.MakeTool(r.toolName(), ns).Image("example/" + r.toolName() + ":1").Command("/" + r.toolName())
		if r.tool != nil {
			r.tool(w)
		}
		Expect(k8sClient.Create(ctx, w.Obj())).To(Succeed())
	}
	if r.objects != nil {
		start := time.Now()
		objs := r.objects(ns)
		createAll(ctx, objs)
		AddReportEntry("set-up", fmt.Sprintf("%d objects created in %s", len(objs), time.Since(start).Round(time.Millisecond)))
	}
	if r.refusedObject != nil {
		expectRefused(k8sClient.Create(ctx, r.refusedObject(ns)), r.want.objectRefused, r.want.objectMessage)
	}
	script := r.script
	if reflect.ValueOf(script).IsZero() {
		script = tg.Outcome{Echo: true}
	}
	kubelet.Script(r.toolName(), script)
}

// expectOutcome checks the terminal call against the row's expectation.
func expectOutcome(call *v1alpha1.ToolCall, w want) {
	GinkgoHelper()
	Expect(call).To(tg.HavePhase(w.phase), explain(call))
	Expect(call.Status.Result).NotTo(BeNil(), "a terminal call has a result")
	Expect(call.Status.Result.Reason).To(Equal(w.reason), explain(call))
	Expect(call.Status.Result.IsError).To(Equal(w.phase != v1alpha1.PhaseSucceeded), explain(call))
	Expect(call.Status.ResultDigest).To(HavePrefix("sha256:"))
	Expect(call).To(tg.HaveCondition(v1alpha1.ConditionCompleted, metav1.ConditionTrue, string(w.phase)), explain(call))
	if w.message != "" {
		Expect(call.Status.Result.Error).To(MatchRegexp(w.message), explain(call))
	}
	if w.content != "" {
		Expect(call.Status.Result.Content).NotTo(BeNil())
		Expect(call.Status.Result.Content.Raw).To(MatchJSON(w.content))
	}
	if w.check != nil {
		w.check(Default, call)
	}
	expectDigestHolds(call)
}

// expectRefused checks an API error: its status reason and a regexp on its message.
func expectRefused(err error, reason metav1.StatusReason, message string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the API server refuses it")
	got := apierrors.ReasonForError(err)
	if status, ok := err.(apierrors.APIStatus); ok && got == metav1.StatusReasonUnknown {
		got = metav1.StatusReason(fmt.Sprintf("Code%d", status.Status().Code))
	}
	Expect(got).To(Equal(reason), "%v", err)
	Expect(err.Error()).To(MatchRegexp(message))
}

// waitTerminal waits until the call is terminal and returns it (tg.WaitTerminal).
func waitTerminal(ctx SpecContext, ns, name string) *v1alpha1.ToolCall {
	GinkgoHelper()
	return tg.WaitTerminal(ctx, k8sClient, client.ObjectKey{Namespace: ns, Name: name})
}

// advanceUntilTerminal waits until the call waits (on an approval, or Running on a Pod
// that will not report), steps the operator's clock and pokes the call until it ends.
func advanceUntilTerminal(ctx SpecContext, ns string, r row) {
	key := client.ObjectKey{Namespace: ns, Name: r.name()}
	call := &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, key, call)).To(Succeed())
		g.Expect(call.Status.Phase).To(BeElementOf(v1alpha1.PhaseRunning, v1alpha1.PhaseAwaitingApproval,
			v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed, v1alpha1.PhaseDenied))
	}).WithContext(ctx).Should(Succeed())
	if call.Status.Phase == v1alpha1.PhaseRunning {
		waitPodWaiting(ctx, ns)
	}
	fakeClock.Step(r.advance)
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, key, call)).To(Succeed())
		if !call.Status.Phase.IsTerminal() {
			poke(ctx, call)
		}
		g.Expect(call.Status.Phase.IsTerminal()).To(BeTrue())
	}).WithContext(ctx).Should(Succeed())
}

// poke changes a call's annotations so that the controller looks at it again.
func poke(ctx SpecContext, call *v1alpha1.ToolCall) {
	patch := client.MergeFrom(call.DeepCopy())
	metav1.SetMetaDataAnnotation(&call.ObjectMeta, "test/poke", time.Now().String())
	_ = k8sClient.Patch(ctx, call, patch) // a conflict with the operator's write is fine: try again
}

// explain renders a call's conditions and result for failure messages.
var explain = tg.Explain

// reconcilePanics sums controller_runtime_reconcile_panics_total over every controller of
// this process (controller-runtime recovers a reconciler's panic and counts it).
func reconcilePanics() float64 {
	families, err := crmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() == "controller_runtime_reconcile_panics_total" {
			for _, m := range f.GetMetric() {
				total += counterValue(m)
			}
		}
	}
	return total
}

func counterValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return 0
}

// checkTable fails on a malformed table: duplicate ids, unknown categories, rows without
// an expectation.
func checkTable(rows []row) {
	seen := map[string]bool{}
	counts := map[category]int{}
	for _, r := range rows {
		Expect(seen[r.id]).To(BeFalse(), "duplicate row id %s", r.id)
		seen[r.id] = true
		Expect(r.category).To(BeElementOf(catArguments, catSchemas, catPolicies, catOutputs, catImages, catRegistry, catIdentity), r.id)
		Expect(r.want.refused != "" || r.want.phase != "").To(BeTrue(), "row %s expects nothing", r.id)
		Expect(r.hostile).NotTo(BeEmpty(), r.id)
		counts[r.category]++
	}
	keys := make([]string, 0, len(counts))
	for c, n := range counts {
		keys = append(keys, fmt.Sprintf("%s=%d", c, n))
	}
	sort.Strings(keys)
	AddReportEntry("catalogue rows", fmt.Sprintf("%d rows: %s", len(rows), strings.Join(keys, " ")))
	Expect(len(rows)).To(BeNumerically(">=", 60), "the catalogue has at least 60 rows")
}
