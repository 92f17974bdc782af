package toolcall

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
)

func unitPolicy(name string, verdict v1alpha1.Verdict) *v1alpha1.ToolPolicy {
	return &v1alpha1.ToolPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: v1alpha1.ToolPolicySpec{Stage: v1alpha1.StagePreExecute, Rules: []v1alpha1.PolicyRule{
			{Name: "always", Expression: "true", Verdict: verdict, Message: "by policy"},
		}},
	}
}

// seriesWith counts the series of c that carry value in any label.
func seriesWith(t *testing.T, c prometheus.Collector, value string) int {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == value {
					n++
				}
			}
		}
	}
	return n
}

// reconcileUntilStill reconciles the call until a pass leaves its phase unchanged.
func reconcileUntilStill(t *testing.T, r *Reconciler, c client.Client, name string) *v1alpha1.ToolCall {
	t.Helper()
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: name}
	call := &v1alpha1.ToolCall{}
	for range 5 {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		before := call.Status.Phase
		if err := c.Get(ctx, key, call); err != nil {
			t.Fatal(err)
		}
		if call.Status.Phase == before {
			return call
		}
	}
	return call
}

// Every call that reaches a terminal phase is counted in toolgate_toolcalls_total, refusals at
// admission and at approval included, under the resolved tool name or "unknown" — never under
// a tool name the caller made up.
func TestEveryTerminalCallIsCountedUnderABoundedToolLabel(t *testing.T) {
	const madeUp = "made-up-tool-3f9c2a"
	cases := []struct {
		name      string
		objs      []client.Object
		call      *v1alpha1.ToolCall
		answer    func(call *v1alpha1.ToolCall) *v1alpha1.ToolCallApproval
		afterPark time.Duration
		wantTool  string
		wantPhase v1alpha1.ToolCallPhase
	}{
		{name: "unknown tool", call: unitCall("c", madeUp), objs: []client.Object{unitEcho()},
			wantTool: metrics.UnknownTool, wantPhase: v1alpha1.PhaseFailed},
		{name: "policy denial", call: unitCall("c", "echo"), objs: []client.Object{unitEcho(), unitPolicy("deny", v1alpha1.VerdictDeny)},
			wantTool: "echo", wantPhase: v1alpha1.PhaseDenied},
		{name: "approval denied", call: unitCall("c", "echo"), objs: []client.Object{unitEcho(), unitPolicy("ask", v1alpha1.VerdictAsk)},
			answer: func(call *v1alpha1.ToolCall) *v1alpha1.ToolCallApproval {
				return &v1alpha1.ToolCallApproval{
					ObjectMeta: metav1.ObjectMeta{Name: call.Name, Namespace: call.Namespace, CreationTimestamp: *call.Status.AdmittedTime},
					Spec: v1alpha1.ToolCallApprovalSpec{Decision: v1alpha1.DecisionDeny, CallUID: string(call.UID),
						ArgumentsDigest: call.Status.ArgumentsDigest, Approver: "bob", Reason: "no"},
				}
			},
			wantTool: "echo", wantPhase: v1alpha1.PhaseDenied},
		{name: "approval timed out", call: unitCall("c", "echo"), objs: []client.Object{unitEcho(), unitPolicy("ask", v1alpha1.VerdictAsk)},
			afterPark: 2 * time.Hour, wantTool: "echo", wantPhase: v1alpha1.PhaseDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			metrics.Outcomes.Reset()
			metrics.CallLatency.Reset()
			r, c := unitReconciler(t, interceptor.Funcs{}, append(tc.objs, tc.call)...)
			got := reconcileUntilStill(t, r, c, tc.call.Name)
			if tc.answer != nil || tc.afterPark > 0 {
				if got.Status.Phase != v1alpha1.PhaseAwaitingApproval {
					t.Fatalf("phase %q, want the call parked first", got.Status.Phase)
				}
				if tc.answer != nil {
					if err := c.Create(context.Background(), tc.answer(got)); err != nil {
						t.Fatal(err)
					}
				}
				r.Clock.(*clocktesting.FakeClock).Step(tc.afterPark)
			}
			got = reconcileUntilStill(t, r, c, tc.call.Name)
			if got.Status.Phase != tc.wantPhase || got.Status.Result == nil {
				t.Fatalf("phase %q result %+v, want %s with a result", got.Status.Phase, got.Status.Result, tc.wantPhase)
			}
			assertAPIReasons(t, apiReasons(t), got)
			reason := got.Status.Result.Reason
			if n := testutil.ToFloat64(metrics.Outcomes.WithLabelValues(tc.wantTool, string(tc.wantPhase), reason)); n != 1 {
				t.Errorf("toolgate_toolcalls_total{tool=%q,phase=%q,reason=%q} = %v, want 1", tc.wantTool, tc.wantPhase, reason, n)
			}
			if n := testutil.CollectAndCount(metrics.CallLatency, "toolgate_toolcall_duration_seconds"); n == 0 {
				t.Error("no toolgate_toolcall_duration_seconds series after a terminal call")
			}
			for _, c := range []prometheus.Collector{metrics.Outcomes, metrics.Verdicts, metrics.CallLatency} {
				if n := seriesWith(t, c, madeUp); n != 0 {
					t.Errorf("%d series labelled with the caller's made-up tool name", n)
				}
			}
		})
	}
}

// The phase gauge reads the active cached calls only (by index), without deep-copying each
// of them on every scrape.
func TestPhaseCounterReadsTheCacheWithoutDeepCopies(t *testing.T) {
	running, parked, done := unitCall("a", "echo"), unitCall("b", "echo"), unitCall("d", "echo")
	running.Status.Phase, parked.Status.Phase, done.Status.Phase = v1alpha1.PhaseRunning, v1alpha1.PhaseAwaitingApproval, v1alpha1.PhaseSucceeded
	deepCopies := true
	funcs := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		deepCopies = lo.UnsafeDisableDeepCopy == nil || !*lo.UnsafeDisableDeepCopy
		if lo.FieldSelector == nil || lo.FieldSelector.Empty() {
			t.Error("the phase counter lists every call: select by the active-phase index")
		}
		return c.List(ctx, list, opts...)
	}}
	_, c := unitReconciler(t, funcs, running, parked, done)
	counts, err := PhaseCounter(c)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"Running": 1, "AwaitingApproval": 1, "Queued": 0}
	for phase, n := range want {
		if counts[phase] != n {
			t.Errorf("%s = %d, want %d (all: %v)", phase, counts[phase], n, counts)
		}
	}
	if deepCopies {
		t.Error("the phase counter lists with deep copies: pass client.UnsafeDisableDeepCopy")
	}
}
