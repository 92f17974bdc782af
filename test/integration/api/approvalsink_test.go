package api_test

import (
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

var _ = Describe("ToolScope approval sinks", Label("toolscope", "validation", "notify"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	DescribeTable("accepts",
		func(ctx SpecContext, w *tgt.ToolScopeWrapper) {
			s := w.Obj()
			s.Namespace = ns
			Expect(k8sClient.Create(ctx, s)).To(Succeed())
			Expect(s.Spec.ApprovalSinks[0].SecretRef.Key).To(Equal(toolgatev1alpha1.DefaultSecretKey))
		},
		Entry("an https sink for every event", tgt.MakeToolScope("s", "").ApprovalSink("chat", "https://hooks.example.com/toolgate?x=1", "chat-key")),
		Entry("an http sink to a cluster Service", tgt.MakeToolScope("s", "").
			ApprovalSink("bot", "http://approvals.bots.svc:8080/events", "bot-key", toolgatev1alpha1.ApprovalEventRequested)),
		Entry("an http sink to a fully qualified Service name", tgt.MakeToolScope("s", "").
			ApprovalSink("bot", "http://approvals.bots.svc.cluster.local/events", "bot-key")),
	)

	It("defaults the Secret key", func(ctx SpecContext) {
		s := tgt.MakeToolScope("s", ns).ApprovalSink("chat", "https://hooks.example.com/", "chat-key").Obj()
		s.Spec.ApprovalSinks[0].SecretRef.Key = ""
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		Expect(s.Spec.ApprovalSinks[0].SecretRef.Key).To(Equal("hmac-key"))
	})

	DescribeTable("rejects",
		func(ctx SpecContext, w *tgt.ToolScopeWrapper, substrings ...string) {
			s := w.Obj()
			s.Namespace = ns
			Expect(k8sClient.Create(ctx, s)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("plain http to the internet", tgt.MakeToolScope("s", "").ApprovalSink("chat", "http://hooks.example.com/", "k"),
			"url must be https://, or http:// to a cluster Service"),
		Entry("plain http to an address", tgt.MakeToolScope("s", "").ApprovalSink("chat", "http://10.0.0.1/", "k"),
			"url must be https://, or http:// to a cluster Service"),
		Entry("another scheme", tgt.MakeToolScope("s", "").ApprovalSink("chat", "ftp://files.example.com/", "k"),
			"url must be https://"),
		Entry("a relative URL", tgt.MakeToolScope("s", "").ApprovalSink("chat", "/events", "k"), "url must be https://"),
		Entry("an unknown event", tgt.MakeToolScope("s", "").ApprovalSink("chat", "https://h.example/", "k", "Ran"),
			"spec.approvalSinks[0].events[0]", "Unsupported value"),
		Entry("a sink name that is not a DNS label", tgt.MakeToolScope("s", "").ApprovalSink("Chat_1", "https://h.example/", "k"),
			"spec.approvalSinks[0].name", "should match"),
		Entry("a Secret name that is not one", tgt.MakeToolScope("s", "").ApprovalSink("chat", "https://h.example/", "a/b"),
			"spec.approvalSinks[0].secretRef.name", "should match"),
		Entry("two sinks of one name", tgt.MakeToolScope("s", "").ApprovalSink("chat", "https://a.example/", "k").
			ApprovalSink("chat", "https://b.example/", "k"), "spec.approvalSinks[1]", "Duplicate value"),
		Entry("nine sinks", nineSinks(), "spec.approvalSinks", "must have at most 8 items"),
	)
})

func nineSinks() *tgt.ToolScopeWrapper {
	w := tgt.MakeToolScope("s", "")
	for i := range 9 {
		w.ApprovalSink("sink-"+strconv.Itoa(i), "https://h.example/", "k")
	}
	return w
}
