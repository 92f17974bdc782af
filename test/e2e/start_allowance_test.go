package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The timeout is the tool's own time (docs/bursts.md): a cold Pod's activeDeadlineSeconds
// adds the start allowance (the chart's 30 s), and the runner stops the tool at its timeout
// counted from the body's start. A 1 s tool that sleeps 0.7 s needs its Pod started
// within 0.3 s of the Job's start to fit a deadline that counted start-up — which a Pod on
// this node never is (runc ~0.5–1 s, gVisor ~2 s): with the allowance it succeeds, under
// runc and gVisor; without it the Job controller ends it DeadlineExceeded.
var _ = Describe("start allowance: sandbox start-up never spends a tool's timeout", Label("timeout", "deadline", "start-allowance"), func() {
	for _, runtime := range []string{"", gvisorClass} {
		name := "e2e-sleep07"
		if runtime != "" {
			name += "-gvisor"
		}
		It("a 1 s tool sleeping 0.7 s succeeds ("+runtimeName(runtime)+")", func(ctx SpecContext) {
			tool := toolgatetest.MakeTool(name, demoNS).Image(toolImage).
				Command("/bin/busybox", "sh", "-c", "sleep 0.7; echo slept").
				RunnerInImage("").Timeout(time.Second)
			if runtime != "" {
				// gVisor's kernel runs inside the Pod's memory cgroup (gvisorCopy).
				tool = tool.RuntimeClass(runtime).Resources(corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}})
			}
			createTool(ctx, tool.Obj())
			call := createCall(ctx, name, "", map[string]any{})
			got := waitTerminal(ctx, call, callTimeout)
			Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)

			jobs := jobsOf(ctx, got)
			Expect(jobs).To(HaveLen(1))
			Expect(jobs[0].Spec.ActiveDeadlineSeconds).To(HaveValue(BeNumerically("==", 1+30)),
				"the Job's deadline: the 1 s timeout plus the chart's 30 s start allowance")
			if pods := podsOf(ctx, got); len(pods) == 1 && jobs[0].Status.StartTime != nil {
				for _, cs := range pods[0].Status.ContainerStatuses {
					if cs.Name == podcontract.ToolContainerName && cs.State.Terminated != nil {
						AddReportEntry("Job start → tool container started ("+runtimeName(runtime)+")",
							cs.State.Terminated.StartedAt.Sub(jobs[0].Status.StartTime.Time).String())
					}
				}
			}
		}, SpecTimeout(2*time.Minute))
	}
})

// runtimeName names a RuntimeClass for a spec's title ("" is the node's default, runc).
func runtimeName(class string) string {
	if class == "" {
		return "runc"
	}
	return class
}
