package toolcall

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/pipeline"
)

// Admission reads the registrations and policies around the informer cache: a policy the
// cache has not seen yet (here: only the live reader has it) still governs the call.
func TestAdmissionReadsPoliciesLive(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	tool := &v1alpha1.Tool{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: "ns"},
		Spec: v1alpha1.NamespacedToolSpec{ToolSpec: v1alpha1.ToolSpec{
			Timeout: &metav1.Duration{Duration: time.Minute},
			Body:    v1alpha1.ToolBody{Image: "example/echo:1", RunnerInImage: true},
		}},
	}
	policy := &v1alpha1.ToolPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-all", Namespace: "ns"},
		Spec: v1alpha1.ToolPolicySpec{Stage: v1alpha1.StagePreExecute, Rules: []v1alpha1.PolicyRule{
			{Name: "always", Expression: "true", Verdict: v1alpha1.VerdictDeny, Message: "no"},
		}},
	}
	call := &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Generation: 1},
		Spec: v1alpha1.ToolCallSpec{Tool: "echo", Requester: "alice",
			Arguments: runtime.RawExtension{Raw: []byte(`{"text":"x"}`)}},
	}
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tool.DeepCopy(), call.DeepCopy()).
		WithStatusSubresource(&v1alpha1.ToolCall{}).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tool.DeepCopy(), policy, call.DeepCopy()).Build()
	compiler, err := pipeline.NewCompiler(pipeline.CompilerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := (&Reconciler{Client: cached, APIReader: live, Scheme: scheme,
		Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakeClock(time.Now()),
		Compiler: compiler, Options: options.DefaultCall()}).wire()

	ctx := context.Background()
	got := &v1alpha1.ToolCall{}
	if err := cached.Get(ctx, client.ObjectKeyFromObject(call), got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.admission.admit(ctx, got); err != nil {
		t.Fatalf("admit: %v", err)
	}
	if err := cached.Get(ctx, client.ObjectKeyFromObject(call), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseDenied || got.Status.Verdict != v1alpha1.VerdictDeny {
		t.Fatalf("phase %q verdict %q, want Denied by the policy only the live reader has; conditions %+v",
			got.Status.Phase, got.Status.Verdict, got.Status.Conditions)
	}
}
