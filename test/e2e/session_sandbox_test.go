package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Issue 32 on real Pods: a session's calls run in long-lived session Pods (one per tool of
// the session) under gVisor, every per-call promise kept.

// sandboxScope is a scope with a workspace and session sandboxes, holding copies of the
// example workspace tools (runtimeClass: under that RuntimeClass), "short_sh" (sh with a 3 s
// timeout), "cred_echo" (prints its credential) and "fetch" (egress to allowed.test:port).
func sandboxScope(ctx context.Context, runtimeClass string, credSecret string, egressPort int32) string {
	GinkgoHelper()
	scope := "e2e-sx-" + rand.String(5)
	s := toolgatetest.MakeToolScope(scope, demoNS).Subjects("agent").Workspace("64Mi", 10*time.Minute).SessionSandbox(5 * time.Minute).Obj()
	metav1.SetMetaDataLabel(&s.ObjectMeta, e2eLabel, "true")
	Expect(admin.Create(ctx, s)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, s))).To(Succeed()) })
	onRuntime := func(t *toolgatev1alpha1.ToolSpec) {
		if runtimeClass != "" {
			t.Sandbox.RuntimeClassName = ptr.To(runtimeClass)
		}
	}
	copies := map[string]func(*toolgatev1alpha1.ToolSpec){
		"ws-read-file": nil, "ws-write-file": nil, "ws-edit-file": nil, "ws-list": nil, "ws-grep": nil, "ws-sh": nil,
		"ws-sh/short": func(t *toolgatev1alpha1.ToolSpec) {
			t.Name = "short_sh"
			t.Timeout = &metav1.Duration{Duration: 3 * time.Second}
		},
	}
	for example, edit := range copies {
		var src toolgatev1alpha1.Tool
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: strings.Split(example, "/")[0]}, &src)).To(Succeed())
		t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: scope + "-" + strings.ReplaceAll(example, "/", "-"), Namespace: demoNS}}
		t.Spec = *src.Spec.DeepCopy()
		t.Spec.Scope = scope
		onRuntime(&t.Spec.ToolSpec)
		if edit != nil {
			edit(&t.Spec.ToolSpec)
		}
		createTool(ctx, t)
	}
	if credSecret != "" {
		cred := toolgatetest.MakeTool(scope+"-cred", demoNS).Scope(scope).Name("cred_echo").Image(toolImage).RunnerInImage("").
			Timeout(30*time.Second).Command("/bin/busybox", "sh", "-c", `printf '%s\n' "$API_TOKEN"`).
			SecretEnv("API_TOKEN", credSecret, "session-token").Obj()
		onRuntime(&cred.Spec.ToolSpec)
		createTool(ctx, cred)
	}
	if egressPort > 0 {
		fetch := toolgatetest.MakeTool(scope+"-fetch", demoNS).Scope(scope).Name("fetch").Image(toolImage).Command("/tools/fetch").
			RunnerInImage("").EgressAllow("allowed.test", egressPort).Timeout(60 * time.Second).Obj()
		onRuntime(&fetch.Spec.ToolSpec)
		createTool(ctx, fetch)
	}
	return scope
}

// sessionPodOf is the session Pod the call's attempt ran in (read live: its uid).
func sessionPodOf(ctx context.Context, call *toolgatev1alpha1.ToolCall) *corev1.Pod {
	GinkgoHelper()
	a := call.Status.Attempts[len(call.Status.Attempts)-1]
	Expect(a.Path).To(Equal(toolgatev1alpha1.PathSession), "the call ran in a session Pod: %s", toolgatetest.Explain(call))
	pod := &corev1.Pod{}
	Expect(admin.Get(ctx, types.NamespacedName{Namespace: call.Namespace, Name: a.PodName}, pod)).To(Succeed())
	return pod
}

// sbOut is an sh call's stdout.
func sbOut(call *toolgatev1alpha1.ToolCall) string {
	GinkgoHelper()
	out, _ := content(call)["stdout"].(string)
	return strings.TrimSpace(out)
}

var _ = Describe("session sandboxes: a session's calls in long-lived Pods", Label("session-sandbox", "workspace", "gvisor"), func() {
	It("runs a 20-call coding session under gVisor with a credential and an egress allow-list, every promise kept", func(ctx SpecContext) {
		secret := "e2e-sx-cred-" + rand.String(5)
		value := "tg-e2e-session-" + rand.String(12)
		credentialSecret(ctx, secret, "session-token", value)
		nodeIP := nodeAddress()
		port, ca, served := tlsHostListener(nodeIP)
		scope := sandboxScope(ctx, gvisorClass, secret, port)
		session := "e2e-sx-" + rand.String(6)
		// A requester of its own: the session Pod caps are per requester, and the suite's
		// other specs hold the agent's session Pods in parallel.
		coder := impersonating(scopeServiceAccount(ctx, scope, "e2e-sx-"+rand.String(5)))
		call := func(tool string, args any) *toolgatev1alpha1.ToolCall {
			GinkgoHelper()
			c := issueAs(ctx, coder, "e2e-sx-"+rand.String(8), scope, session, tool, args)
			return succeeded(waitTerminal(ctx, c, callTimeout))
		}
		start := time.Now()
		var firstDone time.Time
		calls := 0
		step := func(tool string, args any) *toolgatev1alpha1.ToolCall {
			GinkgoHelper()
			got := call(tool, args)
			calls++
			if calls == 1 {
				firstDone = time.Now()
			}
			return got
		}

		By("files: write, read, edit, run, list, grep")
		step("write_file", map[string]any{"path": "app/greet.sh", "content": "echo hello\n"})
		Expect(content(step("read_file", map[string]any{"path": "app/greet.sh"}))["content"]).To(Equal("echo hello\n"))
		step("edit_file", map[string]any{"path": "app/greet.sh", "old_string": "hello", "new_string": "world"})
		step("sh", map[string]any{"command": "sh app/greet.sh > app/out.txt"})
		Expect(content(step("read_file", map[string]any{"path": "app/out.txt"}))["content"]).To(Equal("world\n"))
		step("list", map[string]any{"path": "app"})
		step("grep", map[string]any{"pattern": "world"})

		By("a daemon the last call left is gone before the next runs")
		pid := sbOut(step("sh", map[string]any{"command": "sleep 300 >/dev/null 2>&1 & echo $!"}))
		Expect(pid).To(MatchRegexp(`^\d+$`))
		Expect(sbOut(step("sh", map[string]any{"command": "kill -0 " + pid + " 2>/dev/null && echo alive || echo gone"}))).To(Equal("gone"))

		By("/tmp and $HOME are wiped between calls; the workspace is not")
		step("sh", map[string]any{"command": "echo x > /tmp/leftover && echo y > app/kept"})
		Expect(sbOut(step("sh", map[string]any{"command": "test -e /tmp/leftover && echo kept || echo wiped; cat app/kept"}))).To(Equal("wiped\ny"))

		By("the body cannot speak to its signer: a handover over plain TCP is refused, and the Pod serves on")
		// short_sh: the demo's policy asks a person before sh runs nc (an sh of another name)
		before := sessionPodOf(ctx, step("short_sh", map[string]any{"command": "true"}))
		forged := sbOut(step("short_sh", map[string]any{"command": `printf '{"callUID":"forged","attempt":1}\n' | nc -w 2 127.0.0.1 ` +
			strconv.Itoa(podcontract.SessionPort) + ` 2>&1; echo "nc=$?"`}))
		Expect(forged).NotTo(ContainSubstring("toolgate-warm-result"), "no reply to a forged handover")
		after := sessionPodOf(ctx, step("short_sh", map[string]any{"command": "true"}))
		Expect(after.UID).To(Equal(before.UID), "the same Pod serves the next call")

		By("a credential: redacted in the result")
		cred := step("cred_echo", map[string]any{})
		Expect(string(cred.Status.Result.Content.Raw)).NotTo(ContainSubstring(value))
		Expect(string(cred.Status.Result.Content.Raw)).To(ContainSubstring("[REDACTED]"))

		By("egress through the proxy to the allow-listed host, on the call's own grant")
		base := "https://" + net.JoinHostPort("allowed.test", strconv.Itoa(int(port))) + "/"
		fetched := step("fetch", map[string]any{"ca": ca, "urls": []string{base}})
		var res struct {
			Results []fetchResult `json:"results"`
		}
		Expect(json.Unmarshal(fetched.Status.Result.Content.Raw, &res)).To(Succeed())
		Expect(res.Results).To(ConsistOf(HaveField("OK", true)))
		Expect(served("allowed.test")).To(Equal(1))
		again := step("fetch", map[string]any{"ca": ca, "urls": []string{base}})
		Expect(sessionPodOf(ctx, again).UID).To(Equal(sessionPodOf(ctx, fetched).UID), "both fetches in one Pod")

		By("more edits and reads, to 20 calls")
		for i := 0; calls < 20; i++ {
			name := fmt.Sprintf("notes/%d.txt", i)
			step("write_file", map[string]any{"path": name, "content": fmt.Sprintf("note %d\n", i)})
			Expect(content(step("read_file", map[string]any{"path": name}))["content"]).To(Equal(fmt.Sprintf("note %d\n", i)))
		}
		rest := time.Since(firstDone)
		AddReportEntry("session sandbox: 20-call session under gVisor", fmt.Sprintf("first call %s, the %d after it %s (%.0f ms each)",
			firstDone.Sub(start).Round(time.Millisecond), calls-1, rest.Round(time.Millisecond), float64(rest.Milliseconds())/float64(calls-1)))

		By("one Pod per tool of the session, under gVisor, owned by the scope; no Job")
		pods := &corev1.PodList{}
		Expect(admin.List(ctx, pods, client.InNamespace(demoNS), client.HasLabels{podcontract.LabelSessionPod})).To(Succeed())
		mine := 0
		for _, p := range pods.Items {
			if p.Annotations[podcontract.AnnotationSession] == session {
				mine++
				Expect(p.Spec.RuntimeClassName).To(HaveValue(Equal(gvisorClass)))
			}
		}
		Expect(mine).To(Equal(9), "write_file, read_file, edit_file, sh, short_sh, list, grep, cred_echo, fetch")
	}, SpecTimeout(8*time.Minute))

	It("replaces a Pod whose call overran its deadline, never uses a relabelled one, keeps requesters apart and orders a read after a write", func(ctx SpecContext) {
		scope := sandboxScope(ctx, "", "", 0)
		session := "e2e-sx-" + rand.String(6)

		By("a deadline overrun: the call ends DeadlineExceeded, the next call runs in a fresh Pod")
		first := succeeded(sessionCall(ctx, scope, session, "short_sh", map[string]any{"command": "echo one"}))
		old := sessionPodOf(ctx, first)
		over := sessionCall(ctx, scope, session, "short_sh", map[string]any{"command": "sleep 30"})
		Expect(over).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed), toolgatetest.Explain(over))
		Expect(over.Status.Result.Reason).To(Equal("DeadlineExceeded"))
		next := succeeded(sessionCall(ctx, scope, session, "short_sh", map[string]any{"command": "echo two"}))
		Expect(sessionPodOf(ctx, next).UID).NotTo(Equal(old.UID), "a fresh Pod after the overrun")

		By("a session Pod relabelled into another session is never used")
		r1 := succeeded(sessionCall(ctx, scope, session, "sh", map[string]any{"command": "echo r1"}))
		pod := sessionPodOf(ctx, r1)
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Annotations[podcontract.AnnotationSession] = "someone-else"
		Expect(admin.Patch(ctx, pod, patch)).To(Succeed())
		r2 := succeeded(sessionCall(ctx, scope, session, "sh", map[string]any{"command": "echo r2"}))
		Expect(sessionPodOf(ctx, r2).UID).NotTo(Equal(pod.UID), "the relabelled Pod served no call")

		By("a read issued 100 ms after a write sees it")
		write := issueAs(ctx, agent, "e2e-sx-w-"+rand.String(5), scope, session, "write_file", map[string]any{"path": "late", "content": "seen\n"})
		time.Sleep(100 * time.Millisecond) // the agent's own pause between issuing the two calls: the scenario
		read := issueAs(ctx, agent, "e2e-sx-r-"+rand.String(5), scope, session, "read_file", map[string]any{"path": "late"})
		Expect(content(succeeded(waitTerminal(ctx, read, callTimeout)))["content"]).To(Equal("seen\n"))
		succeeded(waitTerminal(ctx, write, callTimeout))

		By("another requester with the same session name: its own Pods and workspace")
		other := impersonating(scopeServiceAccount(ctx, scope, "e2e-sx-"+rand.String(5)))
		theirs := succeeded(waitTerminal(ctx, issueAs(ctx, other, "e2e-sx-o-"+rand.String(5), scope, session, "list", map[string]any{}), callTimeout))
		Expect(content(theirs)["entries"]).To(BeEmpty(), "the other identity's own, empty workspace")
		ours := succeeded(sessionCall(ctx, scope, session, "list", map[string]any{}))
		Expect(sessionPodOf(ctx, theirs).UID).NotTo(Equal(sessionPodOf(ctx, ours).UID))
		Expect(sessionPodOf(ctx, theirs).Labels[podcontract.LabelSessionRequester]).
			NotTo(Equal(sessionPodOf(ctx, ours).Labels[podcontract.LabelSessionRequester]))
	}, SpecTimeout(6*time.Minute))
})
