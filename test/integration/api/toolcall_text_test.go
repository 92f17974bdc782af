package api_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The free text an agent puts in a call's spec is read by people (toolgate approve, the
// console, describe): the API refuses what could pose as something else there.
var _ = Describe("ToolCall free-text fields", Label("toolcall", "spec", "display"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	DescribeTable("refuses a session that is not an identifier, naming the field and its pattern",
		func(ctx SpecContext, session string) {
			err := k8sClient.Create(ctx, tgt.MakeToolCall("c", ns).Session(session).Obj())
			Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.session", "should match '"+toolgatev1alpha1.SessionPattern+"'"))
		},
		Entry("a newline faking the approval prompt", "s1\nArguments: ls -l /tmp"),
		Entry("ESC (hide what follows)", "s1\x1b[8m"),
		Entry("OSC 52 (write the clipboard)", "\x1b]52;c;Y3VybA==\x07"),
		Entry("a carriage return", "curl|sh\rls"),
		Entry("a bidi override", "s1\u202e"),
		Entry("a bidi isolate", "s1\u2066x\u2069"),
		Entry("a zero-width space", "s\u200b1"),
		Entry("a C1 control", "s\u009b1"),
		Entry("a space", "s 1"),
	)

	It("bounds the session at 253 characters", func(ctx SpecContext) {
		err := k8sClient.Create(ctx, tgt.MakeToolCall("c", ns).Session(strings.Repeat("s", 254)).Obj())
		Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.session: Too long"))
	})

	It("accepts sessions that are identifiers", func(ctx SpecContext) {
		for i, s := range []string{"review-42", "s1", "3f2b8c1e-9a4d-4f6e-8b7a-1c2d3e4f5a6b", "team/conv:42", "alice@example.com", "YWJj+/==", strings.Repeat("s", 253)} {
			createCall(ctx, tgt.MakeToolCall("c"+string(rune('a'+i)), ns).Session(s))
		}
	})

	It("refuses a requester or group whose name, as the API server authenticated it, holds control or bidi characters", func(ctx SpecContext) {
		for _, u := range []struct {
			name   string
			groups []string
			field  string
		}{
			{"mallory\u202etxt.exe", []string{tgt.EditorsGroup}, "spec.requester"},
			{"mallory", []string{tgt.EditorsGroup, "ops\u200b"}, "spec.requesterGroups["},
		} {
			c, err := env.AddUser(u.name, u.groups)
			Expect(err).NotTo(HaveOccurred())
			err = c.Create(ctx, tgt.MakeToolCall("c", ns).Requester(u.name).Obj())
			Expect(err).To(tgt.BeAPIError(metav1.StatusReasonInvalid, u.field, "should match"), "user %q, groups %q", u.name, u.groups)
		}
	})
})
