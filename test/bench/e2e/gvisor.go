package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

// gvisorTool is series G's Tool: the example echo Tool under the gvisor RuntimeClass
// (docs/local-cluster-limits.md, "gVisor"), with 256Mi of memory: gVisor's kernel runs inside the
// Pod's memory cgroup.
const gvisorTool = "bench-echo-gvisor"

// createGvisorTool registers series G's Tool and returns its removal.
func (b *bench) createGvisorTool(ctx context.Context) (func(), error) {
	var echo toolgatev1alpha1.Tool
	if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, &echo); err != nil {
		return nil, fmt.Errorf("series G copies the example echo Tool: %w", err)
	}
	spec := *echo.Spec.DeepCopy()
	spec.Name, spec.Scope = gvisorTool, ""
	spec.Sandbox.RuntimeClassName = ptr.To("gvisor")
	if spec.Body.Resources.Limits == nil {
		spec.Body.Resources.Limits = corev1.ResourceList{}
	}
	spec.Body.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: gvisorTool, Namespace: ns, Labels: b.labels()}, Spec: spec}
	_ = client.IgnoreNotFound(b.admin.Delete(ctx, t))
	time.Sleep(500 * time.Millisecond)
	if err := b.admin.Create(ctx, t); err != nil {
		return nil, fmt.Errorf("create Tool %s: %w", gvisorTool, err)
	}
	if err := waitRegistered(ctx, b.admin, gvisorTool); err != nil {
		b.del(t)
		return nil, err
	}
	return func() { b.del(t) }, nil
}
