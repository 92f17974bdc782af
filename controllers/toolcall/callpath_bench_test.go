package toolcall

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/pipeline"
)

// BenchmarkCallPath is one call's way through the reconciler on a fake API: admission and
// the Job create (one Reconcile), then the attempt's end through post-execute (a
// PostExecute policy that reads the arguments) to the terminal write. The fake client's
// own copies are in the figures; what changes between two versions of the reconciler is
// its share.
func BenchmarkCallPath(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("args=%dKiB", size>>10), func(b *testing.B) { benchCallPath(b, size) })
	}
}

func benchCallPath(b *testing.B, argBytes int) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(batchv1.AddToScheme(scheme))
	utilruntime.Must(networkingv1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	policy := postPolicy("audit", v1alpha1.PolicyRule{Name: "big", Expression: `size(arguments.text) > 1000000`,
		Action: v1alpha1.ActionBlock})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(unitEcho(), policy).
		WithStatusSubresource(&v1alpha1.ToolCall{}).
		WithIndex(&batchv1.Job{}, indexCallName, byCallAnnotation).
		WithIndex(&corev1.Pod{}, indexCallName, byCallAnnotation).
		WithIndex(&v1alpha1.ToolCall{}, indexActivePhase, activePhase).Build()
	compiler, err := pipeline.NewCompiler(pipeline.CompilerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r := (&Reconciler{Client: c, APIReader: c, Scheme: scheme, Recorder: events.NewFakeRecorder(1 << 16),
		Clock: clocktesting.NewFakeClock(time.Now()), Compiler: compiler, Options: options.DefaultCall()}).wire()
	args := []byte(`{"n":1,"text":"` + strings.Repeat("a", argBytes) + `"}`)
	outcome := pipeline.Outcome{Started: true, Attempt: 1,
		Report: &pipeline.Report{Stdout: []byte(`{"echo":"x","n":1.0,"list":[1,2,3]}`)}}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		key := client.ObjectKey{Namespace: "ns", Name: fmt.Sprintf("c%d", i)}
		call := &v1alpha1.ToolCall{
			ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: "ns", Generation: 1, UID: types.UID(key.Name)},
			Spec:       v1alpha1.ToolCallSpec{Tool: "echo", Requester: "alice", Arguments: runtime.RawExtension{Raw: args}},
		}
		if err := c.Create(ctx, call); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			b.Fatal(err)
		}
		if err := c.Get(ctx, key, call); err != nil || call.Status.Phase != v1alpha1.PhaseRunning {
			b.Fatalf("phase %s: %v", call.Status.Phase, err)
		}
		if _, err := r.finishAttempt(ctx, call, outcome); err != nil {
			b.Fatal(err)
		}
		if call.Status.Phase != v1alpha1.PhaseSucceeded {
			b.Fatalf("phase %s: %+v", call.Status.Phase, call.Status.Result)
		}
		// Steady state: the fake API holds one call and no Job at a time (it has no garbage
		// collector, and its indexed LISTs walk every object of the kind).
		if err := c.Delete(ctx, call); err != nil {
			b.Fatal(err)
		}
		if err := c.DeleteAllOf(ctx, &batchv1.Job{}, client.InNamespace("ns")); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetTerminal is stage 8 alone: the result's bound, its stored form and digest,
// for a JSON result of about 1 KiB and 256 KiB (numbers the API server re-encodes, 1.0).
func BenchmarkSetTerminal(b *testing.B) {
	for _, n := range []int{16, 4096} {
		items := make([]any, n)
		for i := range items {
			items[i] = map[string]any{"name": fmt.Sprintf("item-%d", i), "size": json.Number("1.0"),
				"tags": []any{"a", "b"}, "ok": true, "note": strings.Repeat("n", 16)}
		}
		res := pipeline.Result{OK: true, Reason: pipeline.ReasonSucceeded, Content: map[string]any{"items": items},
			Meta: map[string]string{pipeline.MetaAttempt: "1", pipeline.MetaOutputBytes: "1"}}
		size, err := json.Marshal(res.Content)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("result=%dKiB", len(size)>>10), func(b *testing.B) {
			r := (&Reconciler{Clock: clocktesting.NewFakeClock(time.Now()), Options: options.DefaultCall()}).wire()
			call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
			for b.Loop() {
				r.status.setTerminal(call, v1alpha1.PhaseSucceeded, res, time.Now())
				if call.Status.ResultDigest == "" {
					b.Fatal("no digest")
				}
			}
		})
	}
}
