package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// goneUID is the uid of an owner that does not exist: the garbage collector deletes a
// dependent whose owners are all gone.
const goneUID = "00000000-0000-4000-8000-00000000dead"

// recordPatches are what the toolgate-record policy keeps from anyone but the operator,
// each with the part of its refusal that names it.
var recordPatches = []struct{ name, patch, message string }{
	{"an ownerReference to an object that does not exist",
		`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"` + goneUID + `"}]}}`,
		"may change metadata.ownerReferences of ToolCall"},
	{"a finalizer", `{"metadata":{"finalizers":["toolgate.dev/record","example.com/pin"]}}`, "may change metadata.finalizers of ToolCall"},
	{"no finalizer: the operator's toolgate.dev/record removed (a delete would skip the record)", `{"metadata":{"finalizers":null}}`,
		"may change metadata.finalizers of ToolCall"},
	{"a toolgate.dev/ label", `{"metadata":{"labels":{"toolgate.dev/created-by":"forged"}}}`, "may change the toolgate.dev/ labels of ToolCall"},
	{"a label of a toolgate.dev subdomain", `{"metadata":{"labels":{"sandbox.toolgate.dev/x":"y"}}}`, "may change the toolgate.dev/ labels of ToolCall"},
	{"a toolgate.dev/ annotation", `{"metadata":{"annotations":{"toolgate.dev/traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`,
		"may change the toolgate.dev/ annotations of ToolCall"},
}

// mergePatch sends a JSON merge patch of the call ns/name through c.
func mergePatch(ctx SpecContext, c client.Client, obj client.Object, patch string) error {
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
}

func callRef(ns, name string) *v1alpha1.ToolCall {
	return &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// runningCallAs has the user behind c call a tool whose body runs until finished, and waits
// until its Pod runs; it returns the Job's key.
func runningCallAs(ctx SpecContext, ns string, c client.Client, name string) client.ObjectKey {
	GinkgoHelper()
	kubelet.Script("long", Outcome{Hold: true})
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "long"}, &v1alpha1.Tool{}); apierrors.IsNotFound(err) {
		create(ctx, MakeTool("long", ns).Image("example/long:1").Command("/long").Obj())
	}
	Expect(c.Create(ctx, MakeToolCall(name, ns).Tool("long").Args(map[string]any{}).Obj())).To(Succeed())
	jobKey := client.ObjectKey{Namespace: ns, Name: podspec.JobName(name, 1)}
	Eventually(func(g Gomega) {
		job := &batchv1.Job{}
		g.Expect(k8sClient.Get(ctx, jobKey, job)).To(Succeed())
		g.Expect(job.Status.Active).To(BeNumerically("==", 1), "the Pod runs")
	}).WithContext(ctx).Should(Succeed())
	return jobKey
}

// impersonating returns an admin-made client acting as user with groups: for identities no
// certificate is minted for (the garbage collector's ServiceAccount).
func impersonating(user string, groups ...string) client.Client {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("A call's record belongs to the operator", Label("admission", "record", "rbac"), func() {
	It("refuses an agent's owners, finalizers and toolgate.dev/ metadata on another user's running call and on its own", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		robot := bindShippedRole(ctx, ns, AgentRole, "robot")
		mallory := bindShippedRole(ctx, ns, AgentRole, "mallory")
		jobKey := runningCallAs(ctx, ns, robot, "c")

		for _, who := range []struct {
			name string
			c    client.Client
		}{{"mallory, on robot's call", mallory}, {"robot, on its own call", robot}} {
			for _, p := range recordPatches {
				err := mergePatch(ctx, who.c, callRef(ns, "c"), p.patch)
				Expect(IsRecordPolicyDenial(err)).To(BeTrue(), "%s adding %s: %v", who.name, p.name, err)
				Expect(err.Error()).To(ContainSubstring(p.message))
				Expect(err.Error()).To(ContainSubstring("only the operator (RBAC update on toolcalls/finalizers)"))
			}
		}

		By("the spec stays the CRD's: immutable but for cancel, the TTL included")
		err := mergePatch(ctx, robot, callRef(ns, "c"), `{"spec":{"ttlSecondsAfterFinished":0}}`)
		Expect(err).To(BeAPIError(metav1.StatusReasonInvalid, "spec is immutable"))

		By("its own labels and annotations outside toolgate.dev/ stay the agent's")
		Expect(mergePatch(ctx, robot, callRef(ns, "c"), `{"metadata":{"labels":{"team":"a"},"annotations":{"note":"mine"}}}`)).To(Succeed())

		By("the call ran on, untouched, to its own end")
		call := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, call)).To(Succeed())
		Expect(call.OwnerReferences).To(BeEmpty())
		Expect(call.Finalizers).To(ConsistOf(v1alpha1.FinalizerRecord), "the operator's, added at create")
		Expect(call.Labels).To(Equal(map[string]string{"team": "a"}))
		finish(ctx, ns, jobKey.Name, Outcome{Stdout: []byte(`{"done":true}`)})
		Expect(waitTerminal(ctx, ns, "c")).To(HavePhase(v1alpha1.PhaseSucceeded))
	})

	It("refuses a create with finalizers, and with owners unless the creator may delete calls", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		robot := bindShippedRole(ctx, ns, AgentRole, "robot")

		owned := MakeToolCall("owned", ns).Tool("echo").Args(map[string]any{"text": "x"}).Obj()
		owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: goneUID}}
		err := robot.Create(ctx, owned)
		Expect(IsRecordPolicyDenial(err)).To(BeTrue(), "an agent cannot have its call collected at once: %v", err)
		Expect(err.Error()).To(ContainSubstring("only a user who may delete toolcalls in namespace " + ns + " may create one with metadata.ownerReferences; robot may not"))

		pinned := MakeToolCall("pinned", ns).Tool("echo").Args(map[string]any{"text": "x"}).Obj()
		pinned.Finalizers = []string{"example.com/pin"}
		err = robot.Create(ctx, pinned)
		Expect(IsRecordPolicyDenial(err)).To(BeTrue(), "an agent cannot pin its call past retention: %v", err)
		Expect(err.Error()).To(ContainSubstring("may create a ToolCall with metadata.finalizers (but the operator's toolgate.dev/record"))
		Expect(err.Error()).To(ContainSubstring("robot may not"))

		By("toolgate.dev/ labels and annotations are the client's to set on create (the CLI's created-by, traceparent)")
		labelled := MakeToolCall("labelled", ns).Tool("echo").Args(map[string]any{"text": "x"}).Label(v1alpha1.LabelCreatedBy, "toolgate-cli").Obj()
		labelled.Annotations = map[string]string{v1alpha1.AnnotationTraceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		Expect(robot.Create(ctx, labelled)).To(Succeed())
		Expect(labelled.Finalizers).To(ConsistOf(v1alpha1.FinalizerRecord), "the API server adds the operator's own")

		By("an approval never carries a finalizer the operator does not remove")
		approval := MakeToolCallApproval("labelled", ns).CallUID(labelled.UID).Deny().Obj()
		approval.Finalizers = []string{v1alpha1.FinalizerRecord}
		carol := bindShippedRole(ctx, ns, ApproverRole, "carol")
		Expect(IsRecordPolicyDenial(carol.Create(ctx, approval))).To(BeTrue())

		By("a workflow controller that may delete calls owns its calls by its own object")
		workflow := workflowUser(ctx, ns)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "workflow", Namespace: ns}}
		create(ctx, cm)
		step := MakeToolCall("step", ns).Tool("echo").Args(map[string]any{"text": "x"}).Obj()
		step.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}}
		Expect(workflow.Create(ctx, step)).To(Succeed())
		pinned = MakeToolCall("pinned", ns).Tool("echo").Args(map[string]any{"text": "x"}).Obj()
		pinned.Finalizers = []string{"example.com/pin"}
		Expect(IsRecordPolicyDenial(workflow.Create(ctx, pinned))).To(BeTrue(), "finalizers are the operator's, whoever creates")
	})

	It("lets the operator's ClusterRole change them on a running call", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		robot := bindShippedRole(ctx, ns, AgentRole, "robot")
		jobKey := runningCallAs(ctx, ns, robot, "c")
		operator := operatorUser(ctx, ns)
		const patch = `{"metadata":{"finalizers":["toolgate.dev/record","toolgate.dev/test"],"labels":{"toolgate.dev/x":"y"},"annotations":{"toolgate.dev/y":"z"}}}`
		Expect(IsRecordPolicyDenial(mergePatch(ctx, robot, callRef(ns, "c"), patch))).To(BeTrue(), "the same patch by the agent")

		Expect(mergePatch(ctx, operator, callRef(ns, "c"), patch)).To(Succeed())
		Expect(mergePatch(ctx, operator, callRef(ns, "c"), `{"metadata":{"finalizers":["toolgate.dev/record"],"labels":{"toolgate.dev/x":null}}}`)).To(Succeed())
		call := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, call)).To(Succeed())
		Expect(call.Finalizers).To(ConsistOf(v1alpha1.FinalizerRecord))
		Expect(call.Labels).NotTo(HaveKey("toolgate.dev/x"))
		Expect(call.Annotations).To(HaveKeyWithValue("toolgate.dev/y", "z"))
		finish(ctx, ns, jobKey.Name, Outcome{Stdout: []byte(`{"done":true}`)})
		Expect(waitTerminal(ctx, ns, "c")).To(HavePhase(v1alpha1.PhaseSucceeded))
	})

	It("lets the garbage collector remove orphan and foregroundDeletion finalizers and dangling owners", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		robot := bindShippedRole(ctx, ns, AgentRole, "robot")
		// kube-controller-manager with --use-service-account-credentials (kubeadm's default):
		// the collector's ServiceAccount, bound to system:controller:generic-garbage-collector
		// by the API server's bootstrap policy. (The local cluster's runs as a system:masters
		// user, which passes any RBAC check.)
		gc := impersonating("system:serviceaccount:kube-system:generic-garbage-collector",
			"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "workflow", Namespace: ns}}
		create(ctx, cm)
		for _, name := range []string{"orphan", "foreground", "dangling"} {
			call := MakeToolCall(name, ns).Tool("nosuch").Args(map[string]any{}).Obj()
			if name == "dangling" { // the admin may own calls by anything
				call.OwnerReferences = []metav1.OwnerReference{
					{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: goneUID},
					{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}}
			}
			create(ctx, call)
			waitTerminal(ctx, ns, name)
		}

		By("a delete that orphans dependents: the API server adds the orphan finalizer, the collector removes it")
		Expect(k8sClient.Delete(ctx, callRef(ns, "orphan"), client.PropagationPolicy(metav1.DeletePropagationOrphan))).To(Succeed())
		onlyFinalizer(ctx, ns, "orphan", metav1.FinalizerOrphanDependents)
		Expect(IsRecordPolicyDenial(mergePatch(ctx, robot, callRef(ns, "orphan"), `{"metadata":{"finalizers":null}}`))).To(BeTrue(),
			"the finalizer's name is no pass: an agent may not remove it")
		Expect(mergePatch(ctx, gc, callRef(ns, "orphan"), `{"metadata":{"finalizers":null}}`)).To(Succeed())

		By("a foreground delete: the collector removes foregroundDeletion once the dependents are gone")
		Expect(k8sClient.Delete(ctx, callRef(ns, "foreground"), client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		onlyFinalizer(ctx, ns, "foreground", metav1.FinalizerDeleteDependents)
		Expect(mergePatch(ctx, gc, callRef(ns, "foreground"), `{"metadata":{"finalizers":null}}`)).To(Succeed())
		for _, name := range []string{"orphan", "foreground"} {
			Eventually(func() error {
				return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ToolCall{})
			}).WithContext(ctx).Should(Satisfy(apierrors.IsNotFound), name)
		}

		By("an owner that is gone while another stays: the collector drops the dangling reference")
		Expect(mergePatch(ctx, gc, callRef(ns, "dangling"),
			`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"workflow","uid":"`+string(cm.UID)+`"}]}}`)).To(Succeed())
	})
})

// onlyFinalizer waits until the operator has released the call ns/name (its
// toolgate.dev/record gone once the end is recorded) and finalizer alone holds it.
func onlyFinalizer(ctx SpecContext, ns, name, finalizer string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		call := &v1alpha1.ToolCall{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, call)).To(Succeed())
		g.Expect(call.Finalizers).To(ConsistOf(finalizer))
	}).WithContext(ctx).Should(Succeed())
}

// operatorUser is a user bound, in ns, to the operator's shipped ClusterRole (as its
// ServiceAccount is) and to patch on toolcalls, which the operator holds once it writes a
// finalizer of its own; the update on toolcalls/finalizers the policy asks is the shipped
// role's.
func operatorUser(ctx SpecContext, ns string) client.Client {
	GinkgoHelper()
	const name = "system:serviceaccount:toolgate-system:toolgate"
	_ = bindShippedRole(ctx, ns, OperatorRole, name)
	return bindRole(ctx, ns, name, rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"toolcalls"}, Verbs: []string{"get", "patch"}})
}

// workflowUser may create, read and delete calls in ns (a platform's workflow controller
// that owns its calls by its own object), nothing else.
func workflowUser(ctx SpecContext, ns string) client.Client {
	GinkgoHelper()
	return bindRole(ctx, ns, "workflow-controller",
		rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"toolcalls"}, Verbs: []string{"create", "get", "delete"}})
}

// bindRole grants user the rules in ns (a Role and RoleBinding named after the user) and
// returns the user's client.
func bindRole(ctx SpecContext, ns, user string, rules ...rbacv1.PolicyRule) client.Client {
	GinkgoHelper()
	name := "extra-" + user // RBAC names may hold colons
	create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: rules},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	c, err := env.AddUser(user, nil)
	Expect(err).NotTo(HaveOccurred())
	return c
}
