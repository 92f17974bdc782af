package cli_test

import (
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/cli"
)

var _ = Describe("toolgate call in a trace", Label("call", "tracing"), func() {
	It("puts $TRACEPARENT on the ToolCall as toolgate.dev/traceparent", func(ctx SpecContext) {
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		old, had := os.LookupEnv("TRACEPARENT")
		DeferCleanup(func() {
			if had {
				_ = os.Setenv("TRACEPARENT", old)
			} else {
				_ = os.Unsetenv("TRACEPARENT")
			}
		})
		Expect(os.Setenv("TRACEPARENT", tp)).To(Succeed())
		r := toolgate(ctx, "alice", ns, "", "call", "echo", "text=hi", "--wait")
		Expect(r.Code).To(Equal(cli.ExitOK), r.ErrOut)
		Expect(onlyCall(ctx, ns, v1alpha1.PhaseSucceeded).Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationTraceparent, tp))
	})
})
