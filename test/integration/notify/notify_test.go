package notify_test

import (
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gs "github.com/onsi/gomega/gstruct"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/internal/notify"
	"github.com/toolgate/toolgate/pkg/approvalevents"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// teamKey is the key in the Secret the scope's sink names.
var teamKey = []byte("team-sink-key")

// setup makes a namespace where every echo call asks for approval (window 10m), with the
// scope "team" whose sink is sink (signed with teamKey from the Secret "team-sink") and a
// child scope "child"; echo presents its calls as "echo: <text>".
func setup(ctx SpecContext, sink *receiver, events ...v1alpha1.ApprovalEvent) string {
	ns := suite.NewNamespace(ctx, env, "nt")
	create(ctx,
		sinkSecret("team-sink", ns, teamKey),
		MakeTool("echo", ns).Image("example/echo:1").Command("/echo").Presentation(`'echo: ' + arguments.text`, "").
			Parameters(map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}).Obj(),
		MakeToolScope("team", ns).ApprovalSink("chat", sink.URL+"/hook?token=t0ps3cret", "team-sink", events...).Obj(),
		MakeToolScope("child", ns).Parent("team").Obj(),
		MakeToolPolicy("ask", ns).Stage(v1alpha1.StagePreExecute).ApprovalWindow(10*time.Minute).
			Rule(v1alpha1.PolicyRule{Name: "always", Expression: "true", Verdict: v1alpha1.VerdictAsk, Message: "echo needs a person"}).Obj())
	return ns
}

// sinkSecret is an approval sink's HMAC key Secret, of the type that opts it in.
func sinkSecret(name, ns string, key []byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: v1alpha1.SecretTypeApprovalSinkKey,
		Data: map[string][]byte{"hmac-key": key}}
}

// park creates a call by "agent" in scope and waits until it awaits approval.
func park(ctx SpecContext, ns, name, scope string) *v1alpha1.ToolCall {
	agent, err := env.AddUser("agent", []string{EditorsGroup})
	Expect(err).NotTo(HaveOccurred())
	Expect(agent.Create(ctx, MakeToolCall(name, ns).Tool("echo").Scope(scope).Requester("agent").
		Args(map[string]any{"text": "deploy"}).Obj())).To(Succeed())
	call := &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call)).To(Succeed())
		g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
	}).WithContext(ctx).Should(Succeed())
	return call
}

// received waits until sink holds exactly one accepted event of that type for the call.
func received(ctx SpecContext, sink *receiver, call *v1alpha1.ToolCall, eventType string) *approvalevents.Notification {
	GinkgoHelper()
	var got []*approvalevents.Notification
	Eventually(func() []*approvalevents.Notification {
		got = sink.events(call.Namespace, call.Name, eventType)
		return got
	}).WithContext(ctx).Should(HaveLen(1))
	return got[0]
}

func waitPhase(ctx SpecContext, call *v1alpha1.ToolCall, phase v1alpha1.ToolCallPhase) *v1alpha1.ToolCall {
	GinkgoHelper()
	got := &v1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), got)).To(Succeed())
		g.Expect(got).To(HavePhase(phase))
	}).WithContext(ctx).WithTimeout(LongTimeout).Should(Succeed()) // an approved call runs its Job
	return got
}

var _ = Describe("A call that asks for approval", Label("notify"), func() {
	It("is announced to its scope's and the default sink as a signed CloudEvent with its card", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		call := park(ctx, ns, "c1", "team")

		n := received(ctx, sink, call, approvalevents.TypeRequested)
		Expect(n.Event.SpecVersion()).To(Equal("1.0"))
		Expect(n.Event.ID()).To(Equal(string(call.UID) + ".requested"))
		Expect(n.Event.Source()).To(Equal("/apis/toolgate.dev/v1alpha1/namespaces/" + ns + "/toolcalls"))
		Expect(n.Event.Subject()).To(Equal(ns + "/c1"))
		Expect(n.Event.DataContentType()).To(Equal("application/json"))
		Expect(n.Data).To(gs.MatchFields(gs.IgnoreExtras, gs.Fields{
			"Namespace": Equal(ns), "Name": Equal("c1"), "UID": Equal(string(call.UID)),
			"Tool": Equal("echo"), "ToolKind": Equal("Tool"), "Scope": Equal("team"), "Requester": Equal("agent"),
			"Card": Equal("echo: deploy"), "ArgumentsDigest": Equal(call.Status.ArgumentsDigest),
			"ApprovalDeadline": BeTemporally("==", call.Status.ApprovalDeadline.Time),
			"Message":          ContainSubstring("echo needs a person"),
			"ApproveCommand":   Equal("toolgate approve c1 -n " + ns), "DenyCommand": Equal("toolgate deny c1 -n " + ns),
			"ConsoleURL": Equal(consoleURL + "/calls/" + ns + "/c1"), "Decision": BeEmpty(),
		}))
		Expect(call.Status.ArgumentsDigest).To(Equal(Digest([]byte(`{"text":"deploy"}`))))
		req := sink.requests()[0]
		Expect(req.header.Get("Content-Type")).To(HavePrefix("application/cloudevents+json"))
		Expect(req.header.Get(approvalevents.HeaderAttempt)).To(Equal("1"))

		By("the default sink gets the same event, signed with its own key")
		d := received(ctx, defaultSink, call, approvalevents.TypeRequested)
		Expect(d.Event.ID()).To(Equal(n.Event.ID()))
		Expect(d.Data).To(Equal(n.Data))

		By("a receiver holding another key refuses the signature")
		_, err := verifyWith([]byte("not-the-key"), req)
		Expect(err).To(MatchError(approvalevents.ErrSignature))
		_, err = verifyWith(defaultKey, req)
		Expect(err).To(MatchError(approvalevents.ErrSignature))
	})

	It("announces the approval, and a call of a child scope reaches its parent's sink", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		call := park(ctx, ns, "c2", "child")
		Expect(received(ctx, sink, call, approvalevents.TypeRequested).Data.Scope).To(Equal("child"))
		create(ctx, MakeToolCallApproval("c2", ns).For(call).Obj())
		Expect(waitPhase(ctx, call, v1alpha1.PhaseSucceeded).Status.Approver).To(Equal(AdminUser))
		n := received(ctx, sink, call, approvalevents.TypeApproved)
		Expect(n.Event.ID()).To(Equal(string(call.UID) + ".approved"))
		Expect(n.Data).To(gs.MatchFields(gs.IgnoreExtras, gs.Fields{"Decision": Equal("Approved"), "Approver": Equal(AdminUser),
			"Reason": Equal("Approved"), "Card": Equal("echo: deploy"), "DecidedAt": Not(BeNil())}))
	})

	It("announces a denial", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		call := park(ctx, ns, "c3", "team")
		received(ctx, sink, call, approvalevents.TypeRequested)
		create(ctx, MakeToolCallApproval("c3", ns).For(call).Deny().Reason("not today").Obj())
		waitPhase(ctx, call, v1alpha1.PhaseDenied)
		n := received(ctx, sink, call, approvalevents.TypeDenied)
		Expect(n.Data).To(gs.MatchFields(gs.IgnoreExtras, gs.Fields{"Decision": Equal("Denied"), "Approver": Equal(AdminUser),
			"Reason": Equal("ApprovalDenied")}))
	})

	It("announces a parked call that its requester cancelled as denied, reason Cancelled", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		call := park(ctx, ns, "c3c", "team")
		received(ctx, sink, call, approvalevents.TypeRequested)
		patch := client.MergeFrom(call.DeepCopy())
		call.Spec.Cancel = true
		Expect(k8sClient.Patch(ctx, call, patch)).To(Succeed())
		waitPhase(ctx, call, v1alpha1.PhaseFailed)
		n := received(ctx, sink, call, approvalevents.TypeDenied)
		Expect(n.Data).To(gs.MatchFields(gs.IgnoreExtras, gs.Fields{"Decision": Equal("Denied"), "Approver": BeEmpty(),
			"Reason": Equal(v1alpha1.ReasonCancelled)}))
	})

	It("announces the expiry of an unanswered call, only to sinks that want it", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink, v1alpha1.ApprovalEventExpired)
		call := park(ctx, ns, "c4", "team")
		received(ctx, defaultSink, call, approvalevents.TypeRequested)
		fakeClock.Step(11 * time.Minute)
		poke(ctx, call)
		waitPhase(ctx, call, v1alpha1.PhaseDenied)
		n := received(ctx, sink, call, approvalevents.TypeExpired)
		Expect(n.Data).To(gs.MatchFields(gs.IgnoreExtras, gs.Fields{"Decision": Equal("Expired"), "Approver": BeEmpty(),
			"Reason": Equal("ApprovalTimeout")}))
		Expect(sink.requests()).To(HaveLen(1), "the sink wants Expired only")
	})

	It("announces a call deleted and created again under the same name as a new call", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		first := park(ctx, ns, "again", "team")
		received(ctx, sink, first, approvalevents.TypeRequested)
		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(first), &v1alpha1.ToolCall{})
		}).WithContext(ctx).ShouldNot(Succeed())
		second := park(ctx, ns, "again", "team")
		Expect(second.UID).NotTo(Equal(first.UID))
		Eventually(func() []string {
			var ids []string
			for _, n := range sink.events(ns, "again", approvalevents.TypeRequested) {
				ids = append(ids, n.Event.ID())
			}
			return ids
		}).WithContext(ctx).Should(ConsistOf(string(first.UID)+".requested", string(second.UID)+".requested"))
	})

	It("is not announced when it never asks", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		Expect(k8sClient.Delete(ctx, MakeToolPolicy("ask", ns).Obj())).To(Succeed())
		create(ctx, MakeToolCall("free", ns).Tool("echo").Scope("team").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		waitPhase(ctx, &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "free"}}, v1alpha1.PhaseSucceeded)
		Consistently(sink.requests).WithTimeout(ConsistentDuration).Should(BeEmpty())
	})
})

var _ = Describe("A sink that fails", Label("notify"), func() {
	It("gets the event after retries while the call goes on", func(ctx SpecContext) {
		sink := newReceiver(teamKey).failing(2)
		DeferCleanup(sink.Close)
		retries := testutil.ToFloat64(metrics.ApprovalNotificationRetries.WithLabelValues("Requested", "scope"))
		ns := setup(ctx, sink)
		call := park(ctx, ns, "r1", "team")
		Eventually(func() []request { return sink.requests() }).WithContext(ctx).Should(HaveLen(3))
		events := sink.events(ns, "r1", approvalevents.TypeRequested)
		Expect(events).To(HaveLen(3), "every attempt carries the same event")
		for i, req := range sink.requests() {
			Expect(req.header.Get(approvalevents.HeaderAttempt)).To(Equal(strconv.Itoa(i + 1)))
			Expect(req.body).To(Equal(sink.requests()[0].body), "a retry sends the same bytes")
		}
		Expect(testutil.ToFloat64(metrics.ApprovalNotificationRetries.WithLabelValues("Requested", "scope")) - retries).To(BeNumerically(">=", 2))
		create(ctx, MakeToolCallApproval("r1", ns).For(call).Obj())
		waitPhase(ctx, call, v1alpha1.PhaseSucceeded)
	})

	It("that is down for good neither stalls nor fails the call: a Warning event and a metric say so", func(ctx SpecContext) {
		sink := newReceiver(teamKey).failing(-1)
		DeferCleanup(sink.Close)
		failed := testutil.ToFloat64(metrics.ApprovalNotifications.WithLabelValues("Requested", "scope", "failed"))
		ns := setup(ctx, sink)
		call := park(ctx, ns, "d1", "team")
		create(ctx, MakeToolCallApproval("d1", ns).For(call).Obj())
		waitPhase(ctx, call, v1alpha1.PhaseSucceeded)
		Eventually(func(g Gomega) {
			g.Expect(failureEvents(ctx, ns, "d1")).To(ContainElement(And(ContainSubstring("sink team/chat"),
				ContainSubstring("503"), ContainSubstring(strconv.Itoa(maxAttempts)+" attempt"))))
		}).WithContext(ctx).Should(Succeed())
		Expect(testutil.ToFloat64(metrics.ApprovalNotifications.WithLabelValues("Requested", "scope", "failed")) - failed).To(BeNumerically(">=", 1))
		Expect(failureEvents(ctx, ns, "d1")).NotTo(ContainElement(ContainSubstring("t0ps3cret")), "the URL's query stays out of events")
		Expect(len(sink.events(ns, "d1", approvalevents.TypeRequested))).To(Equal(maxAttempts))
		Expect(received(ctx, defaultSink, call, approvalevents.TypeApproved).Data.Decision).To(Equal("Approved"))
	})

	It("whose server is gone is given up after its attempts", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		sink.Close() // connection refused from now on
		ns := setup(ctx, sink)
		call := park(ctx, ns, "g1", "team")
		Eventually(func(g Gomega) {
			g.Expect(failureEvents(ctx, ns, "g1")).To(ContainElement(ContainSubstring("sink team/chat")))
		}).WithContext(ctx).Should(Succeed())
		create(ctx, MakeToolCallApproval("g1", ns).For(call).Obj())
		waitPhase(ctx, call, v1alpha1.PhaseSucceeded)
	})

	It("whose Secret is missing is reported on the call", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		Expect(k8sClient.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-sink", Namespace: ns}})).To(Succeed())
		park(ctx, ns, "s1", "team")
		Eventually(func(g Gomega) {
			g.Expect(failureEvents(ctx, ns, "s1")).To(ContainElement(ContainSubstring("team-sink")))
		}).WithContext(ctx).Should(Succeed())
		Expect(sink.requests()).To(BeEmpty())
	})
})

var _ = Describe("An operator restarted while a call waits", Label("notify", "restart"), func() {
	It("announces the parked call again, under the same event id", func(ctx SpecContext) {
		sink := newReceiver(teamKey)
		DeferCleanup(sink.Close)
		ns := setup(ctx, sink)
		call := park(ctx, ns, "p1", "team")
		first := received(ctx, sink, call, approvalevents.TypeRequested)
		Expect(mgr.Stop()).To(Succeed())
		sink.reset()
		startManager()
		again := received(ctx, sink, call, approvalevents.TypeRequested)
		Expect(again.Event.ID()).To(Equal(first.Event.ID()), "receivers drop the repeat by id")
		Expect(again.Data).To(Equal(first.Data))
	})
})

// failureEvents are the notes of the call's ApprovalNotificationFailed events.
func failureEvents(ctx SpecContext, ns, name string) []string {
	GinkgoHelper()
	events := &eventsv1.EventList{}
	Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.Regarding.Name == name && e.Reason == notify.EventNotificationFailed {
			Expect(e.Type).To(Equal(corev1.EventTypeWarning))
			notes = append(notes, e.Note)
		}
	}
	return notes
}

func create(ctx SpecContext, objs ...client.Object) {
	GinkgoHelper()
	Create(ctx, k8sClient, objs...)
}

// poke changes a call's annotations so that the controller looks at it again.
func poke(ctx SpecContext, call *v1alpha1.ToolCall) {
	patch := client.MergeFrom(call.DeepCopy())
	metav1.SetMetaDataAnnotation(&call.ObjectMeta, "test/poke", time.Now().String())
	Expect(k8sClient.Patch(ctx, call, patch)).To(Succeed())
}
