package controller_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/controllers/toolcall"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

// auditLog collects the operator's audit records (JSON lines), safe for the reconcilers'
// goroutines.
type auditLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (a *auditLog) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.buf.Write(p)
}

// records returns the "toolcall finished" audit records of the call with uid.
func (a *auditLog) records(uid string) []map[string]any {
	return a.recordsWith(uid, toolcall.AuditMessage)
}

// recordsWith returns the audit records of the call with uid whose message is msg.
func (a *auditLog) recordsWith(uid, msg string) []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(a.buf.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["uid"] == uid && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

func (a *auditLog) text() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.buf.String()
}

// historyOptions are the shipped settings with history limits: 2 Succeeded, 1 Failed.
func historyOptions() CallOptions {
	return CallOptions{HistorySucceeded: 2, HistoryFailed: 1}
}

var _ = Describe("Retention of finished calls", Label("retention", "restart"), Serial, func() {
	var audit *auditLog
	startRetention := func(opts CallOptions) {
		mgr = suite.StartManager(env, ManagerOptions{Clock: fakeClock, Kubelet: kubelet, Call: opts,
			CollectGarbage: true, AuditLogger: crzap.New(crzap.WriteTo(audit)).WithName(toolcall.AuditLoggerName)})
	}
	BeforeEach(func() {
		audit = &auditLog{}
		Expect(mgr.Stop()).To(Succeed())
		startRetention(CallOptions{})
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			startManager()
		})
	})

	It("deletes an approved call when its TTL passes, and garbage collection takes its Jobs, Pods and approval by ownership", func(ctx SpecContext) {
		ns, parked := parkedCall(ctx, time.Hour)
		answer(ctx, MakeToolCallApproval("parked", ns).For(parked))
		call := waitTerminal(ctx, ns, "parked")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Approver).To(Equal(AdminUser))
		Expect(call.Status.ExpiresAt).NotTo(BeNil())
		Expect(call.Status.ExpiresAt.Sub(call.Status.CompletionTime.Time)).To(Equal(24 * time.Hour))

		// What garbage collection goes by: every child names its owner by uid.
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		Expect(jobs.Items).To(HaveLen(1))
		Expect(metav1.IsControlledBy(&jobs.Items[0], call)).To(BeTrue(), "the Job is controlled by the call")
		pods := &corev1.PodList{}
		Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		Expect(metav1.IsControlledBy(&pods.Items[0], &jobs.Items[0])).To(BeTrue(), "the Pod is controlled by the Job")
		approval := &v1alpha1.ToolCallApproval{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "parked"}, approval)).To(Succeed())
		Expect(approval.OwnerReferences).To(ContainElement(HaveField("UID", call.UID)))

		fakeClock.Step(24*time.Hour + time.Second)
		poke(ctx, call) // the requeue is a real-time timer; the fake clock jumped a day
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(call), &v1alpha1.ToolCall{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
			g.Expect(jobs.Items).To(BeEmpty(), "Jobs (the operator releases its finalizer once the call is gone)")
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(approval), &v1alpha1.ToolCallApproval{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "approval: %v", err)
		}).WithContext(ctx).Should(Succeed())
	})

	It("takes the TTL from the call, else its tool, else the operator's default", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj(), MakeTool("ttl-echo", ns).Image("example/echo:1").Command("/echo").Obj())
		tool := &v1alpha1.Tool{}
		// The registration controller writes the Tool's status meanwhile: a 409 is retried.
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "echo"}, tool)).To(Succeed())
			tool.Spec.CallTTLSecondsAfterFinished = ptr.To[int32](3600)
			g.Expect(k8sClient.Update(ctx, tool)).To(Succeed())
		}).WithContext(ctx).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(tool), tool)).To(Succeed())
			g.Expect(tool.Status.ObservedGeneration).To(Equal(tool.Generation))
		}).WithContext(ctx).Should(Succeed())
		own := MakeToolCall("own", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "a"}).Obj()
		own.Spec.TTLSecondsAfterFinished = ptr.To[int32](600) // above the floor (5m)
		create(ctx, own,
			MakeToolCall("tools", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "b"}).Obj(),
			MakeToolCall("operators", ns).Tool("ttl-echo").Requester(AdminUser).Args(map[string]any{}).Obj())
		for name, want := range map[string]time.Duration{"own": 10 * time.Minute, "tools": time.Hour, "operators": 24 * time.Hour} {
			call := waitTerminal(ctx, ns, name)
			Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
			Expect(call.Status.ExpiresAt).NotTo(BeNil(), name)
			Expect(call.Status.ExpiresAt.Sub(call.Status.CompletionTime.Time)).To(Equal(want), name)
		}
		immutable := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "own"}, immutable)).To(Succeed())
		immutable.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
		Expect(k8sClient.Update(ctx, immutable)).To(BeAPIError(metav1.StatusReasonInvalid))
	})

	It("deletes a call whose expiry passed while the operator was down, once it is back", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		call := MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "a"}).Obj()
		call.Spec.TTLSecondsAfterFinished = ptr.To[int32](600)
		create(ctx, echoTool(ns).Obj(), call)
		done := waitTerminal(ctx, ns, "c")
		Expect(done.Status.ExpiresAt).NotTo(BeNil())
		// The status is visible before the reconciler has its answer and writes the record:
		// stopping in between would cancel the write's context and lose the record (see
		// docs/retention.md, "Retention and the audit record": at-most-once), which is not what this
		// spec is about.
		Eventually(func() []map[string]any { return audit.records(string(done.UID)) }).WithContext(ctx).Should(HaveLen(1))
		Expect(mgr.Stop()).To(Succeed())
		fakeClock.Step(601 * time.Second)
		startRetention(CallOptions{}) // nothing touches the call: the initial list finds it due
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(call), &v1alpha1.ToolCall{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		Expect(audit.records(string(done.UID))).To(HaveLen(1), "audited when it finished, not again after the restart")
		Expect(audit.recordsWith(string(done.UID), toolcall.AuditReleasedMessage)).To(HaveLen(1), "and released once when deleted")
	})

	It("keeps a call that asked for ttlSecondsAfterFinished 0 until the platform's floor, then deletes it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		agent := bindShippedRole(ctx, ns, AgentRole, "robot")
		create(ctx, echoTool(ns).Obj())
		Expect(agent.Create(ctx, MakeToolCall("brief", ns).Tool("echo").TTL(0).Args(map[string]any{"text": "a"}).Obj())).To(Succeed())
		call := waitTerminal(ctx, ns, "brief")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.ExpiresAt).NotTo(BeNil())
		Expect(call.Status.ExpiresAt.Sub(call.Status.CompletionTime.Time)).To(Equal(controllers.DefaultMinTTL),
			"the agent's 0 is raised to --toolcall-min-ttl")

		fakeClock.Step(controllers.DefaultMinTTL - time.Minute)
		poke(ctx, call)
		Consistently(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(call), &v1alpha1.ToolCall{})
		}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed(), "kept until the floor")

		fakeClock.Step(time.Minute + time.Second)
		poke(ctx, call)
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(call), &v1alpha1.ToolCall{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
	})

	It("keeps a call whose agent, or whose tool, asked for ttlSecondsAfterFinished 2147483647 only until the platform's ceiling", func(ctx SpecContext) {
		const forever = int32(2147483647) // 68 years: 2094
		ns := newNamespace(ctx)
		agent := bindShippedRole(ctx, ns, AgentRole, "robot")
		create(ctx, echoTool(ns).CallTTL(forever).Obj())
		Expect(agent.Create(ctx, MakeToolCall("agents", ns).Tool("echo").TTL(forever).Args(map[string]any{"text": "a"}).Obj())).To(Succeed())
		Expect(agent.Create(ctx, MakeToolCall("tools", ns).Tool("echo").Args(map[string]any{"text": "b"}).Obj())).To(Succeed())
		var calls []*v1alpha1.ToolCall
		for _, name := range []string{"agents", "tools"} {
			call := waitTerminal(ctx, ns, name)
			Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
			Expect(call.Status.ExpiresAt).NotTo(BeNil(), name)
			Expect(call.Status.ExpiresAt.Sub(call.Status.CompletionTime.Time)).To(Equal(controllers.DefaultMaxTTL),
				"%s: lowered to --toolcall-max-ttl", name)
			calls = append(calls, call)
		}

		fakeClock.Step(controllers.DefaultMaxTTL + time.Second)
		for _, call := range calls {
			poke(ctx, call) // the requeue is a real-time timer; the fake clock jumped a week
		}
		for _, call := range calls {
			Eventually(func() error {
				return k8sClient.Get(ctx, client.ObjectKeyFromObject(call), &v1alpha1.ToolCall{})
			}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound), call.Name)
		}
	})

	It("keeps the namespace's newest Succeeded and Failed calls within the history limits", func(ctx SpecContext) {
		Expect(mgr.Stop()).To(Succeed())
		startRetention(historyOptions())
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		run := func(name string, args map[string]any) {
			create(ctx, MakeToolCall(name, ns).Tool("echo").Requester(AdminUser).Args(args).Obj())
			waitTerminal(ctx, ns, name)
			fakeClock.Step(time.Second) // completion times are stored in whole seconds
		}
		for _, name := range []string{"s1", "s2", "s3", "s4"} {
			run(name, map[string]any{"text": name})
		}
		for _, name := range []string{"f1", "f2"} {
			run(name, map[string]any{"text": strings.Repeat("x", 101)}) // maxLength 100: SchemaViolation
		}
		Eventually(func(g Gomega) {
			calls := &v1alpha1.ToolCallList{}
			g.Expect(k8sClient.List(ctx, calls, client.InNamespace(ns))).To(Succeed())
			kept := map[string]v1alpha1.ToolCallPhase{}
			for _, c := range calls.Items {
				kept[c.Name] = c.Status.Phase
			}
			g.Expect(kept).To(Equal(map[string]v1alpha1.ToolCallPhase{
				"s3": v1alpha1.PhaseSucceeded, "s4": v1alpha1.PhaseSucceeded, "f2": v1alpha1.PhaseFailed}))
		}).WithContext(ctx).Should(Succeed())
	})

	It("shares the history limit fairly: one requester's flood pushes out its own calls, not another user's", func(ctx SpecContext) {
		Expect(mgr.Stop()).To(Succeed())
		startRetention(historyOptions()) // 2 Succeeded per namespace
		ns := newNamespace(ctx)
		create(ctx, echoTool(ns).Obj())
		alice, err := env.AddUser("alice", []string{EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
		mallory, err := env.AddUser("mallory", []string{EditorsGroup})
		Expect(err).NotTo(HaveOccurred())
		run := func(as client.Client, requester, name string) {
			Expect(as.Create(ctx, MakeToolCall(name, ns).Tool("echo").Requester(requester).
				Args(map[string]any{"text": name}).Obj())).To(Succeed())
			Expect(waitTerminal(ctx, ns, name)).To(HavePhase(v1alpha1.PhaseSucceeded))
			fakeClock.Step(time.Second) // completion times are stored in whole seconds
		}
		run(alice, "alice", "alice-1") // the oldest call of the namespace
		for i := range 5 {
			run(mallory, "mallory", fmt.Sprintf("flood-%d", i))
		}
		Eventually(func(g Gomega) {
			calls := &v1alpha1.ToolCallList{}
			g.Expect(k8sClient.List(ctx, calls, client.InNamespace(ns))).To(Succeed())
			kept := map[string]string{}
			for _, c := range calls.Items {
				kept[c.Name] = c.Spec.Requester
			}
			g.Expect(kept).To(Equal(map[string]string{"alice-1": "alice", "flood-4": "mallory"}))
		}).WithContext(ctx).Should(Succeed())
	})

	It("logs one audit record per finished call, without its content, and caches the call without it", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("secretive", Outcome{Stdout: []byte(`{"answer":"result-content-marker"}`)})
		create(ctx, MakeTool("secretive", ns).Image("example/echo:1").Command("/echo").Obj(),
			MakeToolCall("c", ns).Tool("secretive").Requester(AdminUser).Args(map[string]any{"text": "argument-content-marker"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(string(call.Status.Result.Content.Raw)).To(ContainSubstring("result-content-marker"), "the API server keeps the result")
		Eventually(func() []map[string]any { return audit.records(string(call.UID)) }).WithContext(ctx).Should(HaveLen(1))
		rec := audit.records(string(call.UID))[0]
		Expect(rec).To(HaveKeyWithValue("logger", toolcall.AuditLoggerName))
		Expect(rec).To(HaveKeyWithValue("namespace", ns))
		Expect(rec).To(HaveKeyWithValue("name", "c"))
		Expect(rec).To(HaveKeyWithValue("tool", "secretive"))
		Expect(rec).To(HaveKeyWithValue("requester", AdminUser))
		Expect(rec).To(HaveKeyWithValue("phase", "Succeeded"))
		Expect(rec).To(HaveKeyWithValue("argumentsDigest", call.Status.ArgumentsDigest))
		Expect(rec).To(HaveKeyWithValue("resultDigest", call.Status.ResultDigest))
		Expect(rec).To(HaveKeyWithValue("resultBytes", BeNumerically("==", len(call.Status.Result.Content.Raw))))
		Expect(rec["stages"]).To(HaveKeyWithValue(v1alpha1.ConditionArgumentsValid, HaveKeyWithValue("status", "True")))
		Expect(rec["attempts"]).To(HaveLen(1))
		Expect(audit.text()).NotTo(ContainSubstring("content-marker"), "no content in the audit log without --audit-include-content")

		// The operator's cache holds the finished call without its content; a live GET has it.
		// The cache catches up with the terminal write asynchronously (its watch event).
		cached := &v1alpha1.ToolCall{}
		Eventually(func(g Gomega) {
			g.Expect(mgr.Client.Get(ctx, client.ObjectKeyFromObject(call), cached)).To(Succeed())
			g.Expect(cached.Status.Phase).To(Equal(v1alpha1.PhaseSucceeded))
		}).WithContext(ctx).Should(Succeed())
		Expect(cached.Status.ResultDigest).To(Equal(call.Status.ResultDigest))
		Expect(cached.Status.Result.Content).To(BeNil())
		Expect(cached.Spec.Arguments.Raw).To(BeNil())
		Expect(cached.Status.Tool.Spec).To(BeNil())
		Expect(cached.ManagedFields).To(BeEmpty())
		Expect(call.ManagedFields).NotTo(BeEmpty(), "the API server has managedFields the cache dropped")

		// A restart does not audit it again.
		Expect(mgr.Stop()).To(Succeed())
		startRetention(CallOptions{})
		create(ctx, MakeToolCall("d", ns).Tool("secretive").Requester(AdminUser).Args(map[string]any{"text": "x"}).Obj())
		next := waitTerminal(ctx, ns, "d")
		Eventually(func() []map[string]any { return audit.records(string(next.UID)) }).WithContext(ctx).Should(HaveLen(1))
		Expect(audit.records(string(call.UID))).To(HaveLen(1))
	})
})
