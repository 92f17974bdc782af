package toolcall

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/options"
	"github.com/toolgate/toolgate/pipeline"
)

// The card of an approval event is the tool's presentation.call over the frozen arguments;
// without one, or when it fails, the tool's name and its canonical arguments, bounded.
func TestApprovalCard(t *testing.T) {
	long := strings.Repeat("x", 2000)
	tests := []struct {
		name, expr, args string
		want             string
	}{
		{"presentation", `'sh: ' + arguments.command`, `{"command":"wget http://x"}`, "sh: wget http://x"},
		{"no presentation", "", `{"b":1,"a":"z"}`, `sh {"a":"z","b":1}`},
		{"presentation that fails", `arguments.missing`, `{"a":1}`, `sh {"a":1}`},
		{"presentation that is not a string", `1`, `{"a":1}`, `sh {"a":1}`},
		{"long arguments", "", `{"a":"` + long + `"}`, `sh {"a":"` + long[:1024-len(`{"a":"`)-len("… [truncated; 2008 bytes in full]")] + "… [truncated; 2008 bytes in full]"},
	}
	r := (&Reconciler{Compiler: pipeline.DefaultCompiler(), Options: options.DefaultCall()}).wire()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := &v1alpha1.ToolSpec{}
			if tc.expr != "" {
				spec.Presentation = &v1alpha1.Presentation{Call: tc.expr}
			}
			frozen, err := pipeline.Freeze([]byte(tc.args), pipeline.FreezeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			call := &v1alpha1.ToolCall{
				ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"},
				Spec:       v1alpha1.ToolCallSpec{Tool: "sh", Requester: "alice", Arguments: runtime.RawExtension{Raw: []byte(tc.args)}},
				Status: v1alpha1.ToolCallStatus{ArgumentsDigest: frozen.Digest(),
					Tool: &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "sh", Spec: spec}},
			}
			d := r.notices.approvalData(call)
			if d.Card != tc.want {
				t.Errorf("card %q\nwant %q", d.Card, tc.want)
			}
			if d.Tool != "sh" || d.ToolKind != "Tool" || d.Requester != "alice" || d.ArgumentsDigest != frozen.Digest() {
				t.Errorf("data %+v", d)
			}
		})
	}
}

// BenchmarkApprovalData is what a parked call costs the reconciler before the event is
// queued: re-freezing the arguments and rendering the card.
func BenchmarkApprovalData(b *testing.B) {
	r := (&Reconciler{Compiler: pipeline.DefaultCompiler(), Options: options.DefaultCall()}).wire()
	args := []byte(`{"command":"wget -qO- http://10.0.0.1"}`)
	frozen, err := pipeline.Freeze(args, pipeline.FreezeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	call := &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"},
		Spec:       v1alpha1.ToolCallSpec{Tool: "sh", Requester: "alice", Arguments: runtime.RawExtension{Raw: args}},
		Status: v1alpha1.ToolCallStatus{ArgumentsDigest: frozen.Digest(), Tool: &v1alpha1.ToolSnapshot{Kind: v1alpha1.ToolKindTool, Name: "sh",
			Spec: &v1alpha1.ToolSpec{Presentation: &v1alpha1.Presentation{Call: `'sh: ' + arguments.command`}}}},
	}
	for b.Loop() {
		if r.notices.approvalData(call).Card == "" {
			b.Fatal("no card")
		}
	}
}
