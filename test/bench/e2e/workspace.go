package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Series S, P and N (issue 23 §1): the example echo Tool copied into a bench scope that
// declares a session workspace, once mounting it ReadOnly (wsTool) and once without
// (plainTool), all cold. S calls share one session (its claim exists and is bound after the
// warm-up), P calls each open a new session (create → claim created, provisioned, bound,
// mounted → result), N is the baseline. The scope's retention is short: P's claims go soon.

const (
	wsScope   = "bench-ws"
	wsTool    = "bench-echo-ws"
	plainTool = "bench-echo-plain"
)

// createWorkspaceTools makes the bench scope and both copies of the example echo Tool.
func (b *bench) createWorkspaceTools(ctx context.Context) (func(), error) {
	var src toolgatev1alpha1.Tool
	if err := b.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, &src); err != nil {
		return nil, fmt.Errorf("example echo Tool: %w", err)
	}
	scope := toolgatetest.MakeToolScope(wsScope, ns).Subjects("agent").Workspace("64Mi", 30*time.Second).Obj()
	scope.Labels = b.labels()
	objs := []client.Object{scope}
	for name, access := range map[string]toolgatev1alpha1.WorkspaceAccess{wsTool: toolgatev1alpha1.WorkspaceReadOnly, plainTool: ""} {
		t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: b.labels()}}
		t.Spec = *src.Spec.DeepCopy()
		t.Spec.Name, t.Spec.Scope = "", wsScope
		t.Spec.Sandbox.Workspace = access
		objs = append(objs, t)
	}
	for _, o := range objs {
		_ = client.IgnoreNotFound(b.admin.Delete(ctx, o))
	}
	time.Sleep(500 * time.Millisecond)
	for _, o := range objs {
		if err := b.admin.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	for _, name := range []string{wsTool, plainTool} {
		if err := waitRegistered(ctx, b.admin, name); err != nil {
			return nil, err
		}
	}
	return func() {
		for _, o := range objs {
			b.del(o)
		}
	}, nil
}

var newSessions int

// workspaceSample is one sample of S, P or N.
func (b *bench) workspaceSample(ctx context.Context, series string) sample {
	switch series {
	case "S":
		return b.callIn(ctx, "S", wsTool, wsScope, "bench-"+b.runID)
	case "P":
		newSessions++
		return b.callIn(ctx, "P", wsTool, wsScope, fmt.Sprintf("bench-%s-%d", b.runID, newSessions))
	}
	return b.callIn(ctx, "N", plainTool, wsScope, "")
}

func reportWorkspace(res map[string][]sample) {
	n := okDurations(res["N"])
	if len(n) == 0 {
		return
	}
	sn := summarize(n)
	for _, s := range []struct{ series, what string }{
		{"S", "workspace mounted (claim bound)"},
		{"P", "first call of a session (claim created and provisioned)"},
	} {
		d := okDurations(res[s.series])
		if len(d) == 0 {
			continue
		}
		ss := summarize(d)
		fmt.Printf("%s %s: p50 %s, p95 %s, max %s; %s/N at p50 %.2fx (+%s)\n", s.series, s.what,
			sec(ss.p50), sec(ss.p95), sec(ss.max), s.series, float64(ss.p50)/float64(max(sn.p50, 1)), sec(ss.p50-sn.p50))
	}
}
