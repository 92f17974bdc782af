/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"encoding/json"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// gvisorClass is the RuntimeClass hack/cluster installs (docs/local-cluster-limits.md, "gVisor").
const gvisorClass = "gvisor"

// gvisorCopy registers a copy of the example Tool `from` as `name`, in toolgate-demo's
// namespace layer, run under gVisor. gVisor's kernel (the sentry) runs inside the Pod's
// memory cgroup, so the copy gets a 256Mi limit where the examples have 32–64Mi.
func gvisorCopy(ctx SpecContext, from, name string) {
	GinkgoHelper()
	var src toolgatev1alpha1.Tool
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: from}, &src)).To(Succeed())
	spec := *src.Spec.DeepCopy()
	spec.Name = name
	spec.Scope = ""
	spec.Sandbox.RuntimeClassName = ptr.To(gvisorClass)
	if spec.Body.Resources.Limits == nil {
		spec.Body.Resources.Limits = corev1.ResourceList{}
	}
	spec.Body.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	createTool(ctx, &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS}, Spec: spec})
}

// shOut runs command through the sh-like tool and returns its stdout (the call must succeed).
func shOut(ctx SpecContext, tool, command string) (string, *toolgatev1alpha1.ToolCall) {
	GinkgoHelper()
	got := waitTerminal(ctx, createCall(ctx, tool, "", map[string]any{"command": command}), 2*time.Minute)
	Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
	var content struct {
		Stdout   string `json:"stdout"`
		ExitCode int    `json:"exitCode"`
	}
	Expect(json.Unmarshal(got.Status.Result.Content.Raw, &content)).To(Succeed())
	return content.Stdout, got
}

// gVisor probes. /proc/kallsyms: the host kernel's symbol table, readable by any user
// under runc (the body shares the host kernel; addresses zeroed, names not); gVisor's kernel
// has no such file. (Measured on this cluster: /proc/config.gz, /proc/iomem, /proc/keys and
// /sys/kernel/notes differ the same way; dmesg the other way round, refused under runc by
// kernel.dmesg_restrict and served by gVisor's own kernel.)
const (
	kernelProbe = `cat /proc/version; dmesg 2>&1 | head -n 1`
	refuseProbe = `if head -c 1 /proc/kallsyms >/dev/null 2>&1; then echo kallsyms-readable; else echo kallsyms-refused; fi`
)

var _ = Describe("gVisor: a tool under the gvisor RuntimeClass", Label("gvisor", "runtimeclass"), Ordered, func() {
	BeforeEach(func(ctx SpecContext) {
		Expect(admin.Get(ctx, client.ObjectKey{Name: gvisorClass}, &nodev1.RuntimeClass{})).To(Succeed(),
			"hack/cluster installs the gvisor RuntimeClass")
		gvisorCopy(ctx, "sh", "gv-sh")
	})

	It("sees gVisor's kernel from inside the body, and is refused what runc allows", func(ctx SpecContext) {
		out, got := shOut(ctx, "gv-sh", kernelProbe+"; "+refuseProbe)
		AddReportEntry("gvisor: /proc/version, dmesg, probe", out)
		Expect(out).To(ContainSubstring("Starting gVisor"), "gVisor's dmesg")
		Expect(out).To(ContainSubstring("kallsyms-refused"))
		for _, p := range podsOf(ctx, got) {
			Expect(p.Spec.RuntimeClassName).To(HaveValue(Equal(gvisorClass)), "Pod %s", p.Name)
		}

		By("control: the same probes under runc see the host's kernel")
		out, _ = shOut(ctx, "sh", kernelProbe+"; "+refuseProbe)
		AddReportEntry("runc: /proc/version, dmesg, probe", out)
		Expect(out).NotTo(ContainSubstring("Starting gVisor"))
		Expect(out).To(ContainSubstring("kallsyms-readable"))
	}, SpecTimeout(4*time.Minute))

	It("keeps the sandbox's promises: frozen bytes, exit codes, deadline, memory limit, signed result", func(ctx SpecContext) {
		gvisorCopy(ctx, "echo", "gv-echo")
		gvisorCopy(ctx, "sleep", "gv-sleep")
		gvisorCopy(ctx, "oom", "gv-oom")

		By("frozen bytes: the body returns exactly the frozen arguments, under a verified frame")
		args := map[string]any{"message": "frozen <bytes> & ünïcødé ✓", "n": []any{1, true, nil}}
		echo := waitTerminal(ctx, createCall(ctx, "gv-echo", "", args), 2*time.Minute)
		Expect(echo).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", echo.Status.Result)
		canonical := canonicalJSON(args)
		Expect(echo.Status.ArgumentsDigest).To(Equal(toolgatetest.Digest(canonical)))
		Expect(string(echo.Status.Result.Content.Raw)).To(MatchJSON(canonical))

		By("exit codes: the body's own exit code comes back")
		out, _ := shOut(ctx, "gv-sh", "echo out; exit 0")
		Expect(out).To(Equal("out\n"))
		exit3 := waitTerminal(ctx, createCall(ctx, "gv-sh", "", map[string]any{"command": "exit 3"}), 2*time.Minute)
		Expect(exit3).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(string(exit3.Status.Result.Content.Raw)).To(ContainSubstring(`"exitCode":3`))

		By("deadline: a 300 s sleep under a 5 s timeout ends DeadlineExceeded")
		start := time.Now()
		slept := waitTerminal(ctx, createCall(ctx, "gv-sleep", "", map[string]any{"seconds": 300}), time.Minute)
		Expect(resultReason(slept)).To(Equal(toolgatev1alpha1.ReasonDeadlineExceeded))
		Expect(time.Since(start)).To(BeNumerically("<", 45*time.Second))

		By("memory: 512 MiB under a 256Mi limit is killed")
		oom := waitTerminal(ctx, createCall(ctx, "gv-oom", "", map[string]any{"mib": 512}), 2*time.Minute)
		Expect(oom).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		AddReportEntry("gvisor oom reason", resultReason(oom))
		Expect(resultReason(oom)).To(BeElementOf(toolgatev1alpha1.ReasonOOMKilled, toolgatev1alpha1.ReasonNonZeroExit))
	}, SpecTimeout(8*time.Minute))

	It("is still cut off by its NetworkPolicy (network None)", func(ctx SpecContext) {
		nodeIP := nodeAddress()
		apiService, apiNode, host := "10.0.0.1:443", net.JoinHostPort(nodeIP, "6443"), hostListener(nodeIP)
		res := probeThroughTool(ctx, "gv-sh", apiService, apiNode, host)
		Expect(res).To(Equal(map[string]bool{apiService: false, apiNode: false, host: false}))
	}, SpecTimeout(4*time.Minute))
})

var _ = Describe("a scope that requires gVisor", Label("gvisor", "runtimeclass", "scope"), func() {
	It("refuses a call of a runc tool in it and runs the gVisor copy", func(ctx SpecContext) {
		gvisorCopy(ctx, "echo", "gv-echo-scoped")
		scope := &toolgatev1alpha1.ToolScope{ObjectMeta: metav1.ObjectMeta{Name: "e2e-gvisor-only", Namespace: demoNS,
			Labels: map[string]string{e2eLabel: "true"}},
			Spec: toolgatev1alpha1.ToolScopeSpec{RuntimeClassName: ptr.To(gvisorClass)}}
		Expect(admin.Create(ctx, scope)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, scope))).To(Succeed()) })

		Eventually(func(g Gomega) {
			refused := waitTerminal(ctx, createCall(ctx, "echo", scope.Name, map[string]any{"message": "x"}), time.Minute)
			g.Expect(resultReason(refused)).To(Equal(toolgatev1alpha1.ReasonRuntimeClassRequired))
			g.Expect(jobsOf(ctx, refused)).To(BeEmpty(), "no body ran")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "once the operator has seen the scope")
		ran := waitTerminal(ctx, createCall(ctx, "gv-echo-scoped", scope.Name, map[string]any{"message": "x"}), 2*time.Minute)
		Expect(ran).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", ran.Status.Result)
	}, SpecTimeout(4*time.Minute))
})
