package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/workspace"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Session workspaces on real Pods and a real volume provisioner (issue 23 §1): a scope of
// this spec's own, with a short retention, and copies of the example scope `coding`'s
// workspace tools (config/examples/workspace.yaml) registered in it.

// wsRetention is the spec scope's retention: short, so that the claim's deletion is seen.
const wsRetention = 15 * time.Second

// wsRetentionKept is the retention of a scope whose specs run many calls over a session and
// never wait for its claim's deletion: long enough that a loaded node's gaps between a
// session's calls never let the claim go between them.
const wsRetentionKept = 10 * time.Minute

// workspaceScope creates a scope declaring a workspace (retention wsRetention) and copies
// the example workspace tools (and sh mounted ReadOnly, as ro_sh) into it; deleted when the
// spec ends.
func workspaceScope(ctx context.Context) string {
	GinkgoHelper()
	return workspaceScopeRetained(ctx, wsRetention)
}

// workspaceScopeRetained is workspaceScope with the given retention.
func workspaceScopeRetained(ctx context.Context, retention time.Duration) string {
	GinkgoHelper()
	scope := "e2e-ws-" + rand.String(5)
	s := toolgatetest.MakeToolScope(scope, demoNS).Subjects("agent").Workspace("64Mi", retention).Obj()
	metav1.SetMetaDataLabel(&s.ObjectMeta, e2eLabel, "true")
	Expect(admin.Create(ctx, s)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, s))).To(Succeed()) })
	copies := map[string]func(*toolgatev1alpha1.ToolSpec){
		"ws-read-file": nil, "ws-write-file": nil, "ws-edit-file": nil, "ws-list": nil, "ws-grep": nil, "ws-sh": nil,
		"ws-sh/ro": func(t *toolgatev1alpha1.ToolSpec) {
			t.Name = "ro_sh"
			t.Sandbox.Workspace = toolgatev1alpha1.WorkspaceReadOnly
		},
	}
	for example, edit := range copies {
		var src toolgatev1alpha1.Tool
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: strings.TrimSuffix(example, "/ro")}, &src)).To(Succeed(),
			"the example workspace tools (make up applies config/examples/workspace.yaml)")
		t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: scope + "-" + strings.ReplaceAll(example, "/", "-"), Namespace: demoNS}}
		t.Spec = *src.Spec.DeepCopy()
		t.Spec.Scope = scope
		if edit != nil {
			edit(&t.Spec.ToolSpec)
		}
		createTool(ctx, t)
	}
	return scope
}

// sessionCall makes one call of the session as the agent and waits for its end.
func sessionCall(ctx context.Context, scope, session, tool string, args any) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	call := toolgatetest.MakeToolCall("", demoNS).Tool(tool).Scope(scope).Session(session).Requester("agent").
		Args(args).Label(e2eLabel, "true").Obj()
	call.GenerateName = "e2e-ws-" + strings.ReplaceAll(tool, "_", "-") + "-"
	Expect(agent.Create(ctx, call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
	// the first call of a session also waits for its claim to be provisioned
	return waitTerminal(ctx, call, callTimeout)
}

// content decodes a call's JSON result content.
func content(call *toolgatev1alpha1.ToolCall) map[string]any {
	GinkgoHelper()
	Expect(call.Status.Result).NotTo(BeNil())
	out := map[string]any{}
	Expect(json.Unmarshal(call.Status.Result.Content.Raw, &out)).To(Succeed(), string(call.Status.Result.Content.Raw))
	return out
}

func succeeded(call *toolgatev1alpha1.ToolCall) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	Expect(call).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), toolgatetest.Explain(call))
	return call
}

var _ = Describe("session workspaces", Label("workspace"), func() {
	It("keeps a session's files across the Pods of its calls, apart from other sessions, until its retention", func(ctx SpecContext) {
		scope := workspaceScope(ctx)
		session := "e2e-" + rand.String(8)
		var calls []*toolgatev1alpha1.ToolCall

		By("five calls, each in a Pod of its own, building on the previous calls' files")
		calls = append(calls, succeeded(sessionCall(ctx, scope, session, "write_file",
			map[string]any{"path": "app/greet.sh", "content": "#!/bin/sh\necho \"hello, $1\"\n"})))
		calls = append(calls, succeeded(sessionCall(ctx, scope, session, "edit_file",
			map[string]any{"path": "app/greet.sh", "old_string": "hello", "new_string": "good morning"})))
		sh := succeeded(sessionCall(ctx, scope, session, "sh",
			map[string]any{"command": "sh app/greet.sh e2e > app/out.txt && cat app/out.txt && pwd"}))
		Expect(content(sh)["stdout"]).To(Equal("good morning, e2e\n" + podcontract.WorkspaceMountPath + "\n"))
		calls = append(calls, sh)
		grep := succeeded(sessionCall(ctx, scope, session, "grep", map[string]any{"pattern": "morning", "path": "app"}))
		Expect(content(grep)["matches"]).To(HaveLen(2), "the edited script and its output")
		calls = append(calls, grep)
		read := succeeded(sessionCall(ctx, scope, session, "read_file", map[string]any{"path": "/workspace/app/out.txt"}))
		Expect(content(read)["content"]).To(Equal("good morning, e2e\n"))
		calls = append(calls, read)
		pods := map[string]bool{}
		for _, c := range calls {
			for _, p := range podsOf(ctx, c) {
				pods[string(p.UID)] = true
			}
		}
		Expect(pods).To(HaveLen(len(calls)), "one Pod per call")

		By("the path escapes are refused by the tools")
		for _, p := range []string{"../../etc/passwd", "/etc/passwd"} {
			esc := sessionCall(ctx, scope, session, "read_file", map[string]any{"path": p})
			Expect(resultReason(esc)).To(Equal(toolgatev1alpha1.ReasonToolError), toolgatetest.Explain(esc))
			Expect(esc.Status.Result.Error).To(ContainSubstring("outside"))
		}
		succeeded(sessionCall(ctx, scope, session, "sh", map[string]any{"command": "ln -s /etc/passwd app/link"}))
		link := sessionCall(ctx, scope, session, "read_file", map[string]any{"path": "app/link"})
		Expect(link.Status.Result.Error).To(ContainSubstring("outside"), toolgatetest.Explain(link))

		By("a ReadOnly tool cannot write")
		ro := sessionCall(ctx, scope, session, "ro_sh", map[string]any{"command": "echo x > app/planted"})
		Expect(ro.Status.Result.IsError).To(BeTrue(), toolgatetest.Explain(ro))
		Expect(ro.Status.Result.Error).To(ContainSubstring("Read-only file system"))
		list := succeeded(sessionCall(ctx, scope, session, "list", map[string]any{"path": "app"}))
		Expect(content(list)["entries"]).To(ConsistOf("greet.sh", "link", "out.txt"))

		By("a second session sees none of them")
		other := "e2e-" + rand.String(8)
		empty := succeeded(sessionCall(ctx, scope, other, "list", map[string]any{"recursive": true}))
		Expect(content(empty)["entries"]).To(BeEmpty())
		missing := sessionCall(ctx, scope, other, "read_file", map[string]any{"path": "app/out.txt"})
		Expect(missing.Status.Result.Error).To(ContainSubstring("no such file"))
		claimA, claimB := workspace.ClaimName(scope, "agent", session), workspace.ClaimName(scope, "agent", other)
		Expect(claimA).NotTo(Equal(claimB))

		By("the claims are deleted once their sessions were idle for the retention")
		for _, name := range []string{claimA, claimB} {
			Eventually(func() error {
				return admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, &corev1.PersistentVolumeClaim{})
			}).WithContext(ctx).WithTimeout(wsRetention+time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound), name)
		}
	})

	It("refuses a workspace call without a session, naming the reason", func(ctx SpecContext) {
		scope := workspaceScope(ctx)
		call := createCall(ctx, "list", scope, map[string]any{})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(resultReason(got)).To(Equal(toolgatev1alpha1.ReasonWorkspaceNeedsSession), toolgatetest.Explain(got))
		Expect(jobsOf(ctx, call)).To(BeEmpty())
	})
})
