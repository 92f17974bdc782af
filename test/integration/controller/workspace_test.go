package controller_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers"
	"github.com/toolgate/toolgate/controllers/workspace"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// fileArgs are the arguments of the scripted workspace bodies below.
type fileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// scriptFileTools scripts "write" (writes content to path) and "read" (prints path's
// content; exit 1 when absent) as bodies working on their session's Workspace.
func scriptFileTools() {
	kubelet.ScriptWorkspace("write", func(ws *Workspace, raw []byte) Outcome {
		var a fileArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return Outcome{ExitCode: 2, Stderr: err.Error()}
		}
		if err := ws.WriteFile(a.Path, []byte(a.Content)); err != nil {
			return Outcome{ExitCode: 1, Stderr: err.Error()}
		}
		return Outcome{Stdout: []byte(`{"written":true}`)}
	})
	kubelet.ScriptWorkspace("read", func(ws *Workspace, raw []byte) Outcome {
		var a fileArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return Outcome{ExitCode: 2, Stderr: err.Error()}
		}
		data, ok := ws.ReadFile(a.Path)
		if !ok {
			return Outcome{ExitCode: 1, Stderr: a.Path + ": no such file"}
		}
		out, _ := json.Marshal(map[string]string{"content": string(data)})
		return Outcome{Stdout: out}
	})
}

func fileTools(ns string) []client.Object {
	return []client.Object{
		MakeTool("write", ns).Image("example/write:1").Command("/write").Workspace(v1alpha1.WorkspaceReadWrite).Obj(),
		MakeTool("read", ns).Image("example/read:1").Command("/read").Workspace(v1alpha1.WorkspaceReadOnly).Obj(),
	}
}

func fileCall(name, ns, tool, scope, session, path, content string) *v1alpha1.ToolCall {
	w := MakeToolCall(name, ns).Tool(tool).Scope(scope).Requester(AdminUser).Args(map[string]any{"path": path, "content": content})
	if session != "" {
		w = w.Session(session)
	}
	return w.Obj()
}

func getClaim(ctx SpecContext, ns, name string) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	return pvc, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)
}

func claims(ctx SpecContext, g Gomega, ns string) []string {
	list := &corev1.PersistentVolumeClaimList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, c := range list.Items {
		names = append(names, c.Name)
	}
	return names
}

// pokeClaim changes a claim's annotations so that the operator looks at it again (after
// the fake clock moved).
func pokeClaim(ctx SpecContext, ns, name string) {
	GinkgoHelper()
	pvc, err := getClaim(ctx, ns, name)
	Expect(err).To(Succeed())
	patch := client.MergeFrom(pvc.DeepCopy())
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, "test/poke", time.Now().String())
	Expect(k8sClient.Patch(ctx, pvc, patch)).To(Succeed())
}

var _ = Describe("Session workspaces", Label("workspace"), func() {
	It("gives each session a claim of its own on its first call, and later calls of the session its files", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scriptFileTools()
		create(ctx, MakeToolScope("coding", ns).Workspace("2Gi", time.Hour).Obj())
		create(ctx, fileTools(ns)...)
		create(ctx, fileCall("w1", ns, "write", "coding", "s1", "notes.txt", "one"))
		Expect(waitTerminal(ctx, ns, "w1")).To(HavePhase(v1alpha1.PhaseSucceeded))

		name := workspace.ClaimName("coding", AdminUser, "s1")
		pvc, err := getClaim(ctx, ns, name)
		Expect(err).To(Succeed())
		Expect(pvc.Labels).To(HaveKeyWithValue(podcontract.LabelWorkspaceScope, "coding"))
		Expect(pvc.Labels).To(HaveKeyWithValue(podcontract.LabelWorkspaceSession, "s1"))
		Expect(pvc.Annotations).To(HaveKeyWithValue(podcontract.AnnotationWorkspaceSession, "s1"))
		Expect(pvc.Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("2Gi")))
		Expect(pvc.OwnerReferences).To(ContainElement(HaveField("Kind", "ToolScope")), "collected with its scope")

		create(ctx, fileCall("r1", ns, "read", "coding", "s1", "notes.txt", ""))
		r1 := waitTerminal(ctx, ns, "r1")
		Expect(r1).To(HavePhase(v1alpha1.PhaseSucceeded), explain(r1))
		Expect(string(r1.Status.Result.Content.Raw)).To(ContainSubstring("one"), "a later call of the session reads the file")
		job := &batchv1.Job{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("r1", 1)}, job)).To(Succeed())
		Expect(job.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ReadOnly", true)))
		Expect(containerNamed(job.Spec.Template.Spec, podcontract.ToolContainerName).VolumeMounts).To(ContainElement(And(
			HaveField("MountPath", podcontract.WorkspaceMountPath), HaveField("ReadOnly", true))))

		By("a second session sees none of the first's files")
		create(ctx, fileCall("r2", ns, "read", "coding", "s2", "notes.txt", ""))
		r2 := waitTerminal(ctx, ns, "r2")
		expectFailure(r2, "NonZeroExit")
		Eventually(func(g Gomega) []string { return claims(ctx, g, ns) }).WithContext(ctx).
			Should(ConsistOf(name, workspace.ClaimName("coding", AdminUser, "s2")))
		Expect(kubelet.Workspace(ns, name).Files()).To(Equal([]string{"notes.txt"}))
		Expect(kubelet.Workspace(ns, workspace.ClaimName("coding", AdminUser, "s2")).Files()).To(BeEmpty())
	})

	It("never lets a requester into another's session of the same name", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scriptFileTools()
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).Obj())
		create(ctx, fileTools(ns)...)
		create(ctx, fileCall("w", ns, "write", "coding", "task-42", "secret.txt", "alice's"))
		Expect(waitTerminal(ctx, ns, "w")).To(HavePhase(v1alpha1.PhaseSucceeded))
		robot := bindShippedRole(ctx, ns, AgentRole, "robot")
		guess := MakeToolCall("guess", ns).Tool("read").Scope("coding").Session("task-42").Requester("robot").
			Args(map[string]any{"path": "secret.txt"}).Obj()
		Expect(robot.Create(ctx, guess)).To(Succeed())
		expectFailure(waitTerminal(ctx, ns, "guess"), "NonZeroExit")
		Eventually(func(g Gomega) []string { return claims(ctx, g, ns) }).WithContext(ctx).Should(ConsistOf(
			workspace.ClaimName("coding", AdminUser, "task-42"), workspace.ClaimName("coding", "robot", "task-42")))
	})

	It("mounts ReadOnly: a ReadOnly tool cannot write", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scriptFileTools()
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).Obj(),
			MakeTool("write", ns).Image("example/write:1").Command("/write").Workspace(v1alpha1.WorkspaceReadOnly).Obj())
		create(ctx, fileCall("w", ns, "write", "coding", "s", "x", "y"))
		done := waitTerminal(ctx, ns, "w")
		expectFailure(done, "NonZeroExit")
		Expect(done.Status.Result.Error).To(ContainSubstring("read-only"))
	})

	It("takes the nearest declaration on the scope chain", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scriptFileTools()
		create(ctx, MakeToolScope("team", ns).Workspace("1Gi", time.Hour).Obj(), MakeToolScope("child", ns).Parent("team").Obj())
		create(ctx, fileTools(ns)...)
		create(ctx, fileCall("w", ns, "write", "child", "s", "a", "b"))
		Expect(waitTerminal(ctx, ns, "w")).To(HavePhase(v1alpha1.PhaseSucceeded))
		_, err := getClaim(ctx, ns, workspace.ClaimName("team", AdminUser, "s"))
		Expect(err).To(Succeed())
	})

	It("refuses a call without a session, and one in a scope that declares no workspace, before any Job or claim", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).Obj(), MakeToolScope("plain", ns).Obj())
		create(ctx, fileTools(ns)...)
		create(ctx, fileCall("nosession", ns, "write", "coding", "", "a", "b"),
			fileCall("noworkspace", ns, "write", "plain", "s", "a", "b"),
			fileCall("nolayer", ns, "write", "", "s", "a", "b"))
		expectFailure(waitTerminal(ctx, ns, "nosession"), v1alpha1.ReasonWorkspaceNeedsSession)
		expectFailure(waitTerminal(ctx, ns, "noworkspace"), v1alpha1.ReasonNoWorkspace)
		done := waitTerminal(ctx, ns, "nolayer")
		expectFailure(done, v1alpha1.ReasonNoWorkspace)
		Expect(done.Status.Result.Error).To(ContainSubstring("no workspace is declared"))
		for _, c := range []string{"nosession", "noworkspace", "nolayer"} {
			Expect(jobExists(ctx, Default, ns, c)).To(BeFalse(), c)
		}
		Expect(claims(ctx, Default, ns)).To(BeEmpty())
	})

	It("ends a call whose claim never binds WorkspaceUnbound at its deadline, never sooner nor later", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.HoldClaims(true)
		DeferCleanup(func() { kubelet.HoldClaims(false) })
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).WorkspaceStorageClass("no-such-class").Obj(),
			MakeTool("write", ns).Image("example/write:1").Command("/write").Workspace(v1alpha1.WorkspaceReadWrite).Timeout(5*time.Second).Obj())
		call := fileCall("c", ns, "write", "coding", "s", "a", "b")
		create(ctx, call)
		Eventually(func(g Gomega) {
			g.Expect(jobExists(ctx, g, ns, "c")).To(BeTrue())
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseRunning))
		}).WithContext(ctx).Should(Succeed())
		pvc, err := getClaim(ctx, ns, workspace.ClaimName("coding", AdminUser, "s"))
		Expect(err).To(Succeed())
		Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal("no-such-class")), "the scope's class wins over the operator's")
		Consistently(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(call), call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseRunning))
		}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed(), "it waits for the claim until its deadline")

		fakeClock.Step(5*time.Second + controllers.DefaultCallOptions().Job.Allowance() + controllers.DefaultCallOptions().DeadlineGrace)
		poke(ctx, call)
		done := waitTerminal(ctx, ns, "c")
		expectFailure(done, v1alpha1.ReasonWorkspaceUnbound)
		Expect(done).To(HaveCondition(v1alpha1.ConditionExecuted, metav1.ConditionFalse, v1alpha1.ReasonWorkspaceUnbound))
		Expect(done.Status.Result.Error).NotTo(ContainSubstring("no-such-class"), "host configuration stays out of the result")
		Expect(kubelet.PodStarts()).NotTo(ContainElement(And(HaveField("Namespace", ns), HaveField("Call", "c"))), "no body ever started")
	})

	It("ends a call whose claim the API server refuses WorkspaceUnbound at once, the refusal for operators only", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		probe := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		remove, err := MakeRefusal("no-claims-"+ns, "", "persistentvolumeclaims", "claims are rationed here").
			Reason(metav1.StatusReasonForbidden).InNamespace(ns).Apply(ctx, k8sClient, probe)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(remove)
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).Obj(),
			MakeTool("write", ns).Image("example/write:1").Command("/write").Workspace(v1alpha1.WorkspaceReadWrite).Timeout(time.Hour).Obj())
		create(ctx, fileCall("c", ns, "write", "coding", "s", "a", "b"))
		done := waitTerminal(ctx, ns, "c")
		expectFailure(done, v1alpha1.ReasonWorkspaceUnbound)
		Expect(meta.FindStatusCondition(done.Status.Conditions, v1alpha1.ConditionExecuted).Message).To(ContainSubstring("claims are rationed here"))
		Expect(done.Status.Result.Error).NotTo(ContainSubstring("rationed"), "the model does not see the cluster's policies")
		Expect(jobExists(ctx, Default, ns, "c")).To(BeFalse())
	})

	It("keeps a session's claim while a call runs, and deletes it once the session was idle for the retention", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("hold", Outcome{Hold: true})
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", 10*time.Second).Obj(),
			MakeTool("hold", ns).Image("example/hold:1").Command("/hold").Workspace(v1alpha1.WorkspaceReadWrite).Timeout(time.Hour).Obj())
		create(ctx, fileCall("c", ns, "hold", "coding", "s", "a", "b"))
		name := workspace.ClaimName("coding", AdminUser, "s")
		Eventually(func(g Gomega) bool { return jobExists(ctx, g, ns, "c") }).WithContext(ctx).Should(BeTrue())

		fakeClock.Step(time.Minute)
		pokeClaim(ctx, ns, name)
		Consistently(func() error { _, err := getClaim(ctx, ns, name); return err }).WithContext(ctx).
			WithTimeout(ConsistentDuration).Should(Succeed(), "a running call keeps its session's claim")

		finish(ctx, ns, podspec.JobName("c", 1), Outcome{Echo: true})
		Expect(waitTerminal(ctx, ns, "c")).To(HavePhase(v1alpha1.PhaseSucceeded))
		Eventually(func(g Gomega) {
			pvc, err := getClaim(ctx, ns, name)
			g.Expect(err).To(Succeed())
			g.Expect(pvc.Annotations).To(HaveKey(podcontract.AnnotationWorkspaceIdleSince))
		}).WithContext(ctx).Should(Succeed())
		fakeClock.Step(5 * time.Second)
		pokeClaim(ctx, ns, name)
		Consistently(func() error { _, err := getClaim(ctx, ns, name); return err }).WithContext(ctx).
			WithTimeout(ConsistentDuration).Should(Succeed(), "kept within its retention")

		fakeClock.Step(6 * time.Second)
		pokeClaim(ctx, ns, name)
		Eventually(func() error { _, err := getClaim(ctx, ns, name); return err }).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound))
		Expect(kubelet.Workspace(ns, name)).To(BeNil(), "its files went with it")
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, &batchv1.Job{})
		}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound), "the session's ended Jobs go with it, ahead of their retention: their Pods would hold the claim")
	})

	It("runs ReadWrite calls as barriers and ReadOnly calls between them in parallel", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("rw", Outcome{Hold: true})
		kubelet.Script("ro", Outcome{Hold: true})
		create(ctx, MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).Obj(),
			MakeTool("rw", ns).Image("example/rw:1").Command("/rw").Workspace(v1alpha1.WorkspaceReadWrite).Obj(),
			// concurrencySafe false: a ReadOnly tool runs in parallel all the same
			MakeTool("ro", ns).Image("example/ro:1").Command("/ro").Workspace(v1alpha1.WorkspaceReadOnly).Obj())
		// One create each, in name order: calls created in the same second are ordered by name.
		for _, c := range []struct{ name, tool string }{{"a-w1", "rw"}, {"b-r1", "ro"}, {"c-r2", "ro"}, {"d-w2", "rw"}} {
			create(ctx, fileCall(c.name, ns, c.tool, "coding", "s", "a", "b"))
		}
		running := func(names ...string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				for _, n := range names {
					g.Expect(jobExists(ctx, g, ns, n)).To(BeTrue(), "%s runs", n)
				}
			}).WithContext(ctx).Should(Succeed())
		}
		waiting := func(names ...string) {
			GinkgoHelper()
			Consistently(func(g Gomega) {
				for _, n := range names {
					g.Expect(jobExists(ctx, g, ns, n)).To(BeFalse(), "%s waits", n)
				}
			}).WithContext(ctx).WithTimeout(ConsistentDuration).Should(Succeed())
		}
		done := func(names ...string) {
			GinkgoHelper()
			for _, n := range names {
				finish(ctx, ns, podspec.JobName(n, 1), Outcome{Echo: true})
				Expect(waitTerminal(ctx, ns, n)).To(HavePhase(v1alpha1.PhaseSucceeded))
			}
		}
		running("a-w1")
		waiting("b-r1", "c-r2", "d-w2")
		done("a-w1")
		running("b-r1", "c-r2")
		waiting("d-w2")
		done("b-r1", "c-r2")
		running("d-w2")
		done("d-w2")
	})
})
