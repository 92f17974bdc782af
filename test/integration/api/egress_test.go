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

package api_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	tgt "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// sandbox.egress.allow: names only, wildcards only as the whole leftmost label, network
// Egress required, no warm pool.
var _ = Describe("Tool sandbox.egress validation", Label("tool", "validation", "egress"), func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	egressTool := func(rules ...toolgatev1alpha1.EgressRule) *tgt.ToolWrapper {
		w := tgt.MakeTool("t", "")
		for _, r := range rules {
			w = w.EgressAllow(r.Host, r.Port)
		}
		return w
	}
	rule := func(host string, port int32) toolgatev1alpha1.EgressRule {
		return toolgatev1alpha1.EgressRule{Host: host, Port: port}
	}
	manyRules := func(n int) []toolgatev1alpha1.EgressRule {
		var out []toolgatev1alpha1.EgressRule
		for i := range n {
			out = append(out, rule(fmt.Sprintf("h%d.example.com", i), 443))
		}
		return out
	}

	DescribeTable("accepts",
		func(ctx SpecContext, w *tgt.ToolWrapper) {
			tool := w.Obj()
			tool.Namespace = ns
			Expect(k8sClient.Create(ctx, tool)).To(Succeed())
		},
		Entry("a name and a port", egressTool(rule("api.example.com", 443))),
		Entry("a left-label wildcard", egressTool(rule("*.example.com", 8443))),
		Entry("the same host on two ports", egressTool(rule("a.test", 80), rule("a.test", 443))),
		Entry("32 rules", egressTool(manyRules(32)...)),
		Entry("a 253-character name", egressTool(rule(strings.Repeat(strings.Repeat("a", 62)+".", 4)[:252]+"b", 1))),
		Entry("a credential on an exact host", tgt.MakeTool("t", "").EgressCredential("api.example.com", 443, "gh", "token", "Authorization", "Bearer")),
		Entry("a credential in an API-key header, no scheme", tgt.MakeTool("t", "").EgressCredential("api.example.com", 443, "gh", "token", "X-Api-Key", "")),
		Entry("8 credentials", credentialTool(8)),
	)

	It("defaults a credential's header to Authorization", func(ctx SpecContext) {
		tool := tgt.MakeTool("t", ns).EgressCredential("api.example.com", 443, "gh", "token", "", "token").Obj()
		Expect(k8sClient.Create(ctx, tool)).To(Succeed())
		Expect(tool.Spec.Sandbox.Egress.Allow[0].Credential.Header).To(Equal("Authorization"))
	})

	DescribeTable("rejects",
		func(ctx SpecContext, w *tgt.ToolWrapper, substrings ...string) {
			tool := w.Obj()
			tool.Namespace = ns
			Expect(k8sClient.Create(ctx, tool)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, substrings...))
		},
		Entry("an allow list with network None", egressTool(rule("api.example.com", 443)).Network(toolgatev1alpha1.NetworkNone),
			"sandbox.egress.allow requires sandbox.network: Egress"),
		Entry("an IPv4 literal", egressTool(rule("10.0.0.1", 443)), "host must be a DNS name, not an IP address"),
		Entry("a one-number IPv4 literal", egressTool(rule("2130706433", 443)), "host must be a DNS name, not an IP address"),
		Entry("an IPv6 literal", egressTool(rule("::1", 443)), "spec.sandbox.egress.allow[0].host", "should match"),
		Entry("a wildcard inside a name", egressTool(rule("a.*.example.com", 443)), "spec.sandbox.egress.allow[0].host", "should match"),
		Entry("a partial wildcard label", egressTool(rule("*api.example.com", 443)), "spec.sandbox.egress.allow[0].host", "should match"),
		Entry("a bare wildcard", egressTool(rule("*", 443)), "spec.sandbox.egress.allow[0].host", "should match"),
		Entry("an uppercase name", egressTool(rule("API.example.com", 443)), "spec.sandbox.egress.allow[0].host", "should match"),
		Entry("a name with a port", egressTool(rule("api.example.com:443", 443)), "spec.sandbox.egress.allow[0].host", "should match"),
		Entry("port 0", egressTool(rule("api.example.com", 0)), "spec.sandbox.egress.allow[0].port", "greater than or equal to 1"),
		Entry("port 65536", egressTool(rule("api.example.com", 65536)), "spec.sandbox.egress.allow[0].port", "less than or equal to 65535"),
		Entry("a host and port twice", egressTool(rule("a.test", 443), rule("a.test", 443)), "spec.sandbox.egress.allow[1]", "Duplicate value"),
		Entry("33 rules", egressTool(manyRules(33)...), "spec.sandbox.egress.allow", "must have at most 32 items"),
		Entry("a warm pool", egressTool(rule("api.example.com", 443)).WarmPool(2, 0), "a warm pool cannot serve a tool with sandbox.egress"),
		Entry("a credential on a wildcard", tgt.MakeTool("t", "").EgressCredential("*.example.com", 443, "gh", "token", "", "Bearer"),
			"a credential needs an exact host, not a wildcard"),
		Entry("a credential in Host", injectHeader("host"), "header must not be a hop-by-hop or framing header"),
		Entry("a credential in Transfer-Encoding", injectHeader("Transfer-Encoding"), "header must not be a hop-by-hop or framing header"),
		Entry("a credential in Content-Length", injectHeader("Content-Length"), "header must not be a hop-by-hop or framing header"),
		Entry("a credential in Connection", injectHeader("CONNECTION"), "header must not be a hop-by-hop or framing header"),
		Entry("a credential in Proxy-Authorization", injectHeader("Proxy-Authorization"), "header must not be a Proxy-* header"),
		Entry("a header that is no field name", injectHeader("X-Key: a"), "spec.sandbox.egress.allow[0].credential.header", "should match"),
		Entry("a scheme with a space", tgt.MakeTool("t", "").EgressCredential("a.test", 443, "gh", "token", "", "Bearer x"),
			"spec.sandbox.egress.allow[0].credential.scheme", "should match"),
		Entry("9 credentials", credentialTool(9), "at most 8 allow entries may carry a credential"),
	)

	It("rejects an empty allow list", func(ctx SpecContext) {
		tool := tgt.MakeTool("t", ns).Network(toolgatev1alpha1.NetworkEgress).Obj()
		tool.Spec.Sandbox.Egress = &toolgatev1alpha1.Egress{Allow: []toolgatev1alpha1.EgressRule{}}
		Expect(k8sClient.Create(ctx, tool)).To(tgt.BeAPIError(metav1.StatusReasonInvalid, "spec.sandbox.egress.allow"))
	})

	It("keeps network Egress without an allow list as it was (no proxy)", func(ctx SpecContext) {
		tool := tgt.MakeTool("t", ns).Network(toolgatev1alpha1.NetworkEgress).Obj()
		Expect(k8sClient.Create(ctx, tool)).To(Succeed())
		Expect(tool.Spec.Sandbox.Egress).To(BeNil())
	})
})

// injectHeader is a Tool whose one egress rule carries a credential in header.
func injectHeader(header string) *tgt.ToolWrapper {
	return tgt.MakeTool("t", "").EgressCredential("a.test", 443, "gh", "token", header, "")
}

// credentialTool is a Tool with n egress rules, each with a credential.
func credentialTool(n int) *tgt.ToolWrapper {
	w := tgt.MakeTool("t", "")
	for i := range n {
		w = w.EgressCredential(fmt.Sprintf("h%d.example.com", i), 443, "gh", "token", "", "Bearer")
	}
	return w
}
