package controller_test

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/frame"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Every ending the operator cannot positively read as "the tool container exited and here
// is the runner's frame" is a failure with a specific reason, never a success; and
// nothing the body wrote itself reaches the result.
var _ = Describe("An ending without the runner's frame", Label("execution", "endings"), func() {
	expectLost := func(call *v1alpha1.ToolCall, reason string, meta map[string]string) {
		expectFailure(call, reason)
		for k, v := range meta {
			ExpectWithOffset(1, call.Status.Result.Meta).To(HaveKeyWithValue(k, v), explain(call))
		}
		ExpectWithOffset(1, call.Status.Result.Meta).NotTo(HaveKey("exitCode"), "no exit code the runner did not vouch for")
	}

	It("a Pod that vanished (force-deleted, node lost) ends ExecutionLost with the Job's reason", func(ctx SpecContext) {
		call := runScripted(ctx, "vanish", Outcome{LosePod: true})
		expectLost(call, "ExecutionLost", map[string]string{"kubernetesReason": "BackoffLimitExceeded"})
	})

	It("a Pod failed for a reason without a result of its own ends ExecutionLost with that reason", func(ctx SpecContext) {
		call := runScripted(ctx, "shutdown", Outcome{PodReason: "NodeShutdown"})
		expectLost(call, "ExecutionLost", map[string]string{"kubernetesReason": "NodeShutdown", "containerExitCode": "137"})
	})

	It("a tool container that exits 0 without a frame ends ExecutionLost", func(ctx SpecContext) {
		call := runScripted(ctx, "silent", Outcome{NoFrame: true})
		expectLost(call, "ExecutionLost", map[string]string{"kubernetesReason": "Completed", "containerExitCode": "0"})
	})
})

var _ = Describe("A frame the runner did not vouch for", Label("execution", "endings", "hostile"), func() {
	logReads := func(call *v1alpha1.ToolCall) []LogRead {
		return kubelet.LogReads(call.Namespace, PodName(podspec.JobName(call.Name, 1)))
	}

	It("a forged frame (the body wrote it and killed the runner) ends ResultUnreadable, its content unused", func(ctx SpecContext) {
		call := runScripted(ctx, "forger", Outcome{Forge: true, Stdout: []byte(`{"forged":true}`)})
		expectFailure(call, "ResultUnreadable")
		Expect(string(call.Status.Result.Content.Raw)).NotTo(ContainSubstring("forged"))
		Expect(call.Status.Result.Meta).To(HaveKeyWithValue("containerExitCode", "0"))
	})

	It("a forged pointer to a gzip bomb in the log ends ResultUnreadable without reading the log", func(ctx SpecContext) {
		call := runScripted(ctx, "bomber", Outcome{Forge: true, Bomb: true})
		expectFailure(call, "ResultUnreadable")
		Expect(logReads(call)).To(BeEmpty(), "nothing is read for a frame that does not verify")
	})

	It("a signed frame larger than the call's output limit allows ends ResultUnreadable without reading the log", func(ctx SpecContext) {
		call := runScripted(ctx, "oversized", Outcome{Bomb: true})
		expectFailure(call, "ResultUnreadable")
		Expect(logReads(call)).To(BeEmpty(), "a pointer announcing more than the limit allows is not followed")
	})

	It("an honest result in the log is read within the call's own output limit", func(ctx SpecContext) {
		r := rand.New(rand.NewPCG(3, 4))
		noise := make([]byte, 6000)
		for i := range noise {
			noise[i] = byte(r.Uint32())
		}
		call := runScripted(ctx, "bounded", Outcome{Stdout: []byte("small"), Stderr: base64.StdEncoding.EncodeToString(noise)},
			func(w *ToolWrapper) { w.MaxOutputBytes(1000) })
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		var content string
		Expect(json.Unmarshal(call.Status.Result.Content.Raw, &content)).To(Succeed())
		Expect(content).To(Equal("small"))
		reads := logReads(call)
		Expect(reads).To(HaveLen(1), "the frame travelled through the log")
		Expect(reads[0].LimitBytes).To(BeNumerically("<=", 2*frame.MaxFrameBytes(1000)+frame.LogSlackBytes))
	})
})
