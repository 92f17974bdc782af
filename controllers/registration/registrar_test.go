package registration

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// Both kinds register the same way: the oldest namesake keeps the name, a newer one is
// DuplicateName, a bad schema is SchemaInvalid, the rest Registered with their resolved
// name; a Tool also needs its scope.
func TestToolAndClusterToolRegisterAlike(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	old, young := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	spec := func(name string, params string) v1alpha1.ToolSpec {
		s := v1alpha1.ToolSpec{Name: name, Body: v1alpha1.ToolBody{Image: "example/echo:1"}}
		if params != "" {
			s.Parameters = &runtime.RawExtension{Raw: []byte(params)}
		}
		return s
	}
	tool := func(name string, created metav1.Time, s v1alpha1.ToolSpec, scope string) *v1alpha1.Tool {
		return &v1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: created, Generation: 1},
			Spec: v1alpha1.NamespacedToolSpec{ToolSpec: s, Scope: scope}}
	}
	clusterTool := func(name string, created metav1.Time, s v1alpha1.ToolSpec) *v1alpha1.ClusterTool {
		return &v1alpha1.ClusterTool{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created, Generation: 1}, Spec: s}
	}
	want := map[string]string{"first": v1alpha1.ReasonRegistered, "second": v1alpha1.ReasonDuplicateName,
		"broken": v1alpha1.ReasonSchemaInvalid, "other": v1alpha1.ReasonRegistered}
	compiler, err := pipeline.NewCompiler(pipeline.CompilerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reconcile := func(t *testing.T, r interface {
		Reconcile(context.Context, ctrl.Request) (ctrl.Result, error)
	}, c client.Client, objs []client.Object) map[string]string {
		got := map[string]string{}
		for _, o := range objs {
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o)}); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
				t.Fatal(err)
			}
			var st v1alpha1.ToolStatus
			switch o := o.(type) {
			case *v1alpha1.Tool:
				st = o.Status
			case *v1alpha1.ClusterTool:
				st = o.Status
			}
			cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRegistered)
			if cond == nil || st.ResolvedName == "" || st.SpecDigest == "" || cond.ObservedGeneration != 1 {
				t.Fatalf("%s: status %+v", o.GetName(), st)
			}
			got[o.GetName()] = cond.Reason
		}
		return got
	}

	t.Run("Tool", func(t *testing.T) {
		objs := []client.Object{tool("first", old, spec("echo", ""), ""), tool("second", young, spec("echo", ""), ""),
			tool("broken", old, spec("", `{"type": 7}`), ""), tool("other", old, spec("", ""), ""),
			tool("lost", old, spec("", ""), "nowhere")}
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Tool{}).
			WithIndex(&v1alpha1.Tool{}, IndexToolName, func(o client.Object) []string {
				return []string{catalog.ToolName(&o.(*v1alpha1.Tool).Spec.ToolSpec, o.GetName())}
			}).Build()
		r := &ToolReconciler{Client: c, Recorder: events.NewFakeRecorder(100), Compiler: compiler}
		wantTool := map[string]string{"lost": v1alpha1.ReasonUnknownScope}
		for k, v := range want {
			wantTool[k] = v
		}
		if diff := cmp.Diff(wantTool, reconcile(t, r, c, objs)); diff != "" {
			t.Errorf("Registered reasons (-want +got):\n%s", diff)
		}
	})
	t.Run("ClusterTool", func(t *testing.T) {
		objs := []client.Object{clusterTool("first", old, spec("echo", "")), clusterTool("second", young, spec("echo", "")),
			clusterTool("broken", old, spec("", `{"type": 7}`)), clusterTool("other", old, spec("", ""))}
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.ClusterTool{}).Build()
		r := &ClusterToolReconciler{Client: c, Recorder: events.NewFakeRecorder(100), Compiler: compiler}
		if diff := cmp.Diff(want, reconcile(t, r, c, objs)); diff != "" {
			t.Errorf("Registered reasons (-want +got):\n%s", diff)
		}
	})
}
