package controller_test

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/toolcall"
	"github.com/toolgate/toolgate/controllers/workspace"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pipeline"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// scribbleSession is a session of ReadWrite calls of "scribble", a body that traps SIGTERM
// and keeps writing to the workspace's notes.txt: each scribble Pod notes at its start what
// it found in notes.txt, then writes its own line, then runs on.
type scribbleSession struct {
	ns, claim string
	mu        sync.Mutex
	found     map[string]string // call → notes.txt as its body found it
}

func newScribbleSession(ctx SpecContext, retention time.Duration) *scribbleSession {
	s := &scribbleSession{ns: newNamespace(ctx), found: map[string]string{}}
	s.claim = workspace.ClaimName("coding", AdminUser, "s")
	held := Outcome{Hold: true, IgnoreSIGTERM: true}
	kubelet.ScriptWorkspace("scribble", func(ws *Workspace, args []byte) Outcome {
		notes, _ := ws.ReadFile("notes.txt")
		s.mu.Lock()
		s.found[string(args)] = string(notes)
		s.mu.Unlock()
		if err := ws.WriteFile("notes.txt", append(notes, args...)); err != nil {
			return Outcome{ExitCode: 1, Stderr: err.Error()}
		}
		return held
	})
	create(ctx, MakeToolScope("coding", s.ns).Workspace("1Gi", retention).Obj(),
		MakeTool("scribble", s.ns).Image("example/scribble:1").Command("/scribble").Workspace(v1alpha1.WorkspaceReadWrite).Obj())
	return s
}

// call creates a scribble call of the session; its arguments are {"call": name}.
func (s *scribbleSession) call(ctx SpecContext, name string) {
	GinkgoHelper()
	create(ctx, MakeToolCall(name, s.ns).Tool("scribble").Scope("coding").Session("s").Requester(AdminUser).
		Args(map[string]any{"call": name}).Obj())
}

// foundBy is notes.txt as the named call's body found it at its start; false: it has not started.
func (s *scribbleSession) foundBy(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	notes, ok := s.found[`{"call":"`+name+`"}`]
	return notes, ok
}

// podOf waits for the named call's first Pod and returns its name.
func (s *scribbleSession) podOf(ctx SpecContext, name string) string {
	GinkgoHelper()
	var pod string
	Eventually(func(g Gomega) {
		for _, p := range kubelet.PodStarts() {
			if p.Namespace == s.ns && p.Call == name {
				pod = p.Pod
			}
		}
		g.Expect(pod).NotTo(BeEmpty(), "%s's body runs", name)
	}).WithContext(ctx).WithTimeout(LongTimeout).Should(Succeed())
	return pod
}

// expectHeld checks, for ConsistentDuration, that the stopped call first has not ended and
// that second has not started, while first's Pod (being deleted) still runs.
func (s *scribbleSession) expectHeld(ctx SpecContext, firstPod string) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		first, pod := &v1alpha1.ToolCall{}, &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "first"}, first)).To(Succeed())
		g.Expect(first.Status.Phase.IsTerminal()).To(BeFalse(), "first ended while its body ran: %s", explain(first))
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: firstPod}, pod)).To(Succeed(), "the body runs on")
		_, started := s.foundBy("second")
		g.Expect(started).To(BeFalse(), "second ran beside first's body")
		second := &v1alpha1.ToolCall{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "second"}, second)).To(Succeed())
		g.Expect(second).To(HavePhase(v1alpha1.PhaseQueued))
	}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed())
}

// endGrace plays the end of first's grace period (SIGKILL) after its body's last write to
// notes.txt, which it returns.
func (s *scribbleSession) endGrace(ctx SpecContext, firstPod string) string {
	GinkgoHelper()
	ws := kubelet.Workspace(s.ns, s.claim)
	Expect(ws).NotTo(BeNil())
	notes, _ := ws.ReadFile("notes.txt")
	last := string(notes) + " first's last line"
	Expect(ws.WriteFile("notes.txt", []byte(last))).To(Succeed(), "first's body writes on after SIGTERM")
	Expect(kubelet.EndGrace(ctx, s.ns, firstPod)).To(Succeed())
	return last
}

// expectSecondFinds checks that second starts, now, and finds notes.txt as first's body left it.
func (s *scribbleSession) expectSecondFinds(ctx SpecContext, last string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		found, started := s.foundBy("second")
		g.Expect(started).To(BeTrue(), "second starts once first's Pod is gone")
		g.Expect(found).To(Equal(last), "second finds the workspace as first's body left it")
	}).WithContext(ctx).WithTimeout(LongTimeout).Should(Succeed())
}

// A call whose body ignores SIGTERM is a barrier until its Pod is gone, not until its Job
// is deleted: the next ReadWrite call of its session does not run beside it, and the record
// says the execution was stopped only once it was.
var _ = Describe("A stopped call's barrier", Label("barrier", "session", "workspace", "cancel", "deletion"), Serial, func() {
	var audit *auditLog
	BeforeEach(func() {
		audit = &auditLog{}
		Expect(mgr.Stop()).To(Succeed())
		mgr = suite.StartManager(env, ManagerOptions{Clock: fakeClock, Kubelet: kubelet, Call: CallOptions{AuditIncludeContent: true},
			AuditLogger: crzap.New(crzap.WriteTo(audit)).WithName(toolcall.AuditLoggerName)})
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			startManager()
		})
	})

	It("holds the session while a cancelled call's Pod runs on, and records Cancelled once it is gone", func(ctx SpecContext) {
		s := newScribbleSession(ctx, time.Hour)
		s.call(ctx, "first")
		firstPod := s.podOf(ctx, "first")
		s.call(ctx, "second")
		Eventually(func(g Gomega) {
			second := &v1alpha1.ToolCall{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "second"}, second)).To(Succeed())
			g.Expect(second).To(HavePhase(v1alpha1.PhaseQueued))
		}).WithContext(ctx).Should(Succeed())

		Expect(cancelAs(ctx, k8sClient, s.ns, "first")).To(Succeed())
		Eventually(func(g Gomega) {
			first, pod := &v1alpha1.ToolCall{}, &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "first"}, first)).To(Succeed())
			g.Expect(first).To(HavePhase(v1alpha1.PhaseRunning))
			g.Expect(first).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionUnknown, v1alpha1.ReasonStopping))
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: firstPod}, pod)).To(Succeed())
			g.Expect(pod.DeletionTimestamp).NotTo(BeNil(), "the body got SIGTERM")
		}).WithContext(ctx).Should(Succeed())
		s.expectHeld(ctx, firstPod)

		s.expectSecondFinds(ctx, s.endGrace(ctx, firstPod))
		first := waitTerminal(ctx, s.ns, "first")
		expectCancelled(first, pipeline.CancelledWhileRunning)
		Expect(first.Status.Result.Error).To(Equal("the call was cancelled while it ran; its execution was stopped"))
		finish(ctx, s.ns, podspec.JobName("second", 1), Outcome{Echo: true})
		Expect(waitTerminal(ctx, s.ns, "second")).To(HavePhase(v1alpha1.PhaseSucceeded))
	})

	It("holds the session while a deleted call's Pod runs on, and lets the call go once it is gone", func(ctx SpecContext) {
		s := newScribbleSession(ctx, time.Hour)
		s.call(ctx, "first")
		firstPod := s.podOf(ctx, "first")
		s.call(ctx, "second")
		live := &v1alpha1.ToolCall{}
		Eventually(func(g Gomega) {
			second := &v1alpha1.ToolCall{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "second"}, second)).To(Succeed())
			g.Expect(second).To(HavePhase(v1alpha1.PhaseQueued))
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: "first"}, live)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())

		Expect(k8sClient.Delete(ctx, live)).To(Succeed(), "an admin deletes the running call")
		Eventually(func(g Gomega) {
			pod := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: firstPod}, pod)).To(Succeed())
			g.Expect(pod.DeletionTimestamp).NotTo(BeNil(), "the body got SIGTERM")
		}).WithContext(ctx).Should(Succeed())
		s.expectHeld(ctx, firstPod)
		Expect(audit.records(string(live.UID))).To(BeEmpty(), "no end is recorded while the body runs")

		s.expectSecondFinds(ctx, s.endGrace(ctx, firstPod))
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(live), &v1alpha1.ToolCall{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound), "the operator lets the call go")
		records := audit.records(string(live.UID))
		Expect(records).To(HaveLen(1), audit.text())
		Expect(records[0]).To(HaveKeyWithValue("reason", string(pipeline.ReasonDeleted)))
		Expect(records[0]).To(HaveKeyWithValue("resultError", "the call was deleted while it ran; its execution was stopped"))
		finish(ctx, s.ns, podspec.JobName("second", 1), Outcome{Echo: true})
		Expect(waitTerminal(ctx, s.ns, "second")).To(HavePhase(v1alpha1.PhaseSucceeded))
	})

	It("keeps the session's workspace claim past its retention while a cancelled call's body runs on", func(ctx SpecContext) {
		s := newScribbleSession(ctx, 10*time.Second)
		s.call(ctx, "first")
		firstPod := s.podOf(ctx, "first")
		Expect(cancelAs(ctx, k8sClient, s.ns, "first")).To(Succeed())
		Eventually(func(g Gomega) {
			pod := &corev1.Pod{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: firstPod}, pod)).To(Succeed())
			g.Expect(pod.DeletionTimestamp).NotTo(BeNil(), "the body got SIGTERM")
		}).WithContext(ctx).Should(Succeed())

		fakeClock.Step(15 * time.Second) // past the claim's retention, within the Pod's grace and --deadline-grace
		pokeClaim(ctx, s.ns, s.claim)
		Consistently(func() error { _, err := getClaim(ctx, s.ns, s.claim); return err }).WithContext(ctx).
			WithTimeout(ConsistentDuration).Should(Succeed(), "the claim a body still writes to is kept")

		s.endGrace(ctx, firstPod)
		expectCancelled(waitTerminal(ctx, s.ns, "first"), pipeline.CancelledWhileRunning)
	})
})
