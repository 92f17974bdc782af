package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Session pool Pods on real Pods (docs/session-sandboxes.md, "A tool with a warm pool"): a
// pooled tool keeps session-mode pool Pods where a ToolScope declares sessionSandbox, and a
// session's first call claims one instead of starting toolgate-session-<h>.

// sessionPoolTimeout bounds the wait for a session pool Pod: its TLS Secret is created
// after it, and its signer starts once the Secret is mounted (a loaded 2-core node).
const sessionPoolTimeout = 3 * time.Minute

// pooledSessionTool copies the example echo Tool (runner in the image) into scope as name,
// with a warm pool of size; created, Registered and deleted when the spec ends.
func pooledSessionTool(ctx context.Context, scope, name string, size int32) {
	GinkgoHelper()
	var src toolgatev1alpha1.Tool
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: "echo"}, &src)).To(Succeed())
	t := &toolgatev1alpha1.Tool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS}}
	t.Spec = *src.Spec.DeepCopy()
	t.Spec.Name, t.Spec.Scope = "", scope
	t.Spec.WarmPool = &toolgatev1alpha1.WarmPool{Size: size}
	createTool(ctx, t)
}

// readySessionPool waits until the tool's pool holds n Ready, unclaimed session pool Pods
// (pool Pods carrying the session CA) and returns them.
func readySessionPool(ctx context.Context, tool string, n int) []corev1.Pod {
	GinkgoHelper()
	return readyPoolPods(ctx, tool, n, func(p *corev1.Pod) bool { return !warmPod(p) }, sessionPoolTimeout)
}

func podUIDs(pods []corev1.Pod) []types.UID {
	out := make([]types.UID, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.UID)
	}
	return out
}

var _ = Describe("session pool Pods: a pooled tool's session claims a started Pod", Label("session-pool", "session-sandbox"), func() {
	It("runs a session's first call in a claimed pool Pod and its next calls there, refills the pool, and gives another requester another Pod", func(ctx SpecContext) {
		scope := "e2e-sp-" + rand.String(5)
		s := toolgatetest.MakeToolScope(scope, demoNS).Subjects("agent").SessionSandbox(5 * time.Minute).Obj()
		metav1.SetMetaDataLabel(&s.ObjectMeta, e2eLabel, "true")
		Expect(admin.Create(ctx, s)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, s))).To(Succeed()) })
		tool := "e2e-sp-echo-" + rand.String(5)
		pooledSessionTool(ctx, scope, tool, 1)
		session := "e2e-sp-" + rand.String(6)
		// Requesters of their own: the session Pod caps are per requester (a capped call runs
		// cold), and the suite's other specs hold the agent's session Pods in parallel.
		first := impersonating(scopeServiceAccount(ctx, scope, "e2e-sp-"+rand.String(5)))
		second := impersonating(scopeServiceAccount(ctx, scope, "e2e-sp-"+rand.String(5)))
		call := func(as client.Client, msg string) *toolgatev1alpha1.ToolCall {
			GinkgoHelper()
			c := issueAs(ctx, as, "e2e-sp-"+rand.String(8), scope, session, tool, map[string]any{"message": msg})
			got := succeeded(waitTerminal(ctx, c, callTimeout))
			Expect(string(got.Status.Result.Content.Raw)).To(ContainSubstring(msg))
			Expect(jobsOf(ctx, got)).To(BeEmpty(), "a session call creates no Job")
			return got
		}

		By("the tool's session pool Pod is Ready")
		pool := readySessionPool(ctx, tool, 1)

		By("the session's first call runs in the pool Pod, claimed: no session Pod is created")
		one := call(first, "one")
		claimed := sessionPodOf(ctx, one)
		Expect(podUIDs(pool)).To(ContainElement(claimed.UID), "the first call ran in the pool Pod")
		Expect(claimed.Name).To(HavePrefix(tool+"-warms-"), "a pool Pod keeps its name")
		Expect(claimed.Labels).NotTo(HaveKey(podcontract.LabelPool), "it left its pool")
		Expect(claimed.Labels).To(HaveKey(podcontract.LabelSessionPod))
		Expect(claimed.Labels).To(HaveKey(podcontract.LabelSessionRequester))
		Expect(claimed.Annotations).To(HaveKeyWithValue(podcontract.AnnotationSession, session))
		Expect(claimed.Annotations).To(HaveKeyWithValue(podcontract.AnnotationSessionScope, scope))
		Expect(claimed.Annotations).To(HaveKeyWithValue(podcontract.AnnotationSessionRequester, one.Spec.Requester))
		Expect(metav1.GetControllerOf(claimed)).To(HaveField("Kind", "ToolScope"), "the session's, as a session Pod is")
		var pods corev1.PodList
		Expect(admin.List(ctx, &pods, client.InNamespace(demoNS), client.HasLabels{podcontract.LabelSessionPod})).To(Succeed())
		for _, p := range pods.Items {
			if p.Annotations[podcontract.AnnotationSessionScope] == scope {
				Expect(p.Name).NotTo(HavePrefix("toolgate-session-"), "no session Pod was created in the scope")
			}
		}

		By("the session's next two calls run in the same Pod")
		for _, msg := range []string{"two", "three"} {
			Expect(sessionPodOf(ctx, call(first, msg)).UID).To(Equal(claimed.UID), msg)
		}

		By("the pool refills to its size without the claimed Pod")
		refilled := readySessionPool(ctx, tool, 1)
		Expect(podUIDs(refilled)).NotTo(ContainElement(claimed.UID))

		By("another requester with the same session name: another Pod, claimed from the pool")
		theirs := sessionPodOf(ctx, call(second, "theirs"))
		Expect(theirs.UID).NotTo(Equal(claimed.UID))
		Expect(podUIDs(refilled)).To(ContainElement(theirs.UID), "the refilled pool Pod")
		Expect(theirs.Labels[podcontract.LabelSessionRequester]).NotTo(Equal(claimed.Labels[podcontract.LabelSessionRequester]))
		Expect(sessionPodOf(ctx, call(first, "four")).UID).To(Equal(claimed.UID), "the first requester's session keeps its Pod")
	}, SpecTimeout(8*time.Minute))
})
