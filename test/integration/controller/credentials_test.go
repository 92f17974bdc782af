package controller_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// credentialValue is what the tests' Secret holds: it must appear in no object the
// operator writes.
const credentialValue = "ghp_s3cr3t-value-never-copied"

var _ = Describe("A tool with credentials", Label("credentials"), func() {
	credTool := func(ns string) *ToolWrapper {
		return echoTool(ns).Timeout(time.Hour).SecretEnv("GITHUB_TOKEN", "github", "token").SecretFile("deploy.conf", "deploy", "config")
	}
	secret := func(ns, name string, data map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	}

	It("runs with the Secrets the kubelet resolves, and no value reaches the call, its Job or its events", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, secret(ns, "github", map[string]string{"token": credentialValue}),
			secret(ns, "deploy", map[string]string{"config": credentialValue + "-file"}), credTool(ns).Obj(),
			MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseSucceeded), explain(call))
		Expect(call.Status.Tool.Spec.Body.Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef",
			v1alpha1.CredentialKeySelector{Name: "github", Key: "token"})), "the snapshot keeps the reference")

		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		Expect(jobs.Items).NotTo(BeEmpty())
		events := &eventsv1.EventList{}
		Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		for _, obj := range []any{call, jobs, events} {
			raw, err := json.Marshal(obj)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(raw)).NotTo(ContainSubstring(credentialValue))
		}
		names := map[string]bool{}
		for _, e := range containerNamed(jobs.Items[0].Spec.Template.Spec, podcontract.SignerContainerName).Env {
			names[e.Name] = true
		}
		Expect(names).To(HaveKey(podcontract.EnvSecretEnv))
		Expect(names).To(HaveKey(podcontract.EnvSecretFiles))
	})

	DescribeTable("ends CredentialMissing at once, far from its deadline, when a credential's Secret or key is missing",
		func(ctx SpecContext, secrets func(ns string) []client.Object, kubeletSays string) {
			ns := newNamespace(ctx)
			create(ctx, append(secrets(ns), credTool(ns).Obj(),
				MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())...)
			call := waitTerminal(ctx, ns, "c")
			Expect(call).To(HavePhase(v1alpha1.PhaseFailed), explain(call))
			Expect(call.Status.Result.Reason).To(Equal(v1alpha1.ReasonCredentialMissing), explain(call))
			Expect(call.Status.Result.IsError).To(BeTrue())
			Expect(call.Status.CompletionTime.Sub(call.CreationTimestamp.Time)).To(BeNumerically("<", 30*time.Minute),
				"ended by the kubelet's refusal, not the hour-long deadline")
			executed := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionExecuted)
			Expect(executed).NotTo(BeNil(), explain(call))
			Expect(executed.Message).To(ContainSubstring("(kubelet: "+kubeletSays), "the platform team learns which Secret or key")
			Expect(call.Status.Result.Error).NotTo(ContainSubstring(kubeletSays), "the result the agent reads does not quote it")
		},
		Entry("no Secret", func(ns string) []client.Object {
			return []client.Object{secret(ns, "deploy", map[string]string{"config": credentialValue})}
		}, `secret "github" not found`),
		Entry("the Secret without the key", func(ns string) []client.Object {
			return []client.Object{secret(ns, "github", map[string]string{"other": credentialValue}),
				secret(ns, "deploy", map[string]string{"config": credentialValue})}
		}, "couldn't find key token in Secret "),
		Entry("a secret file's Secret missing", func(ns string) []client.Object {
			return []client.Object{secret(ns, "github", map[string]string{"token": credentialValue})}
		}, `secret "deploy" not found`),
	)

	It("lets a policy ask for approval of a tool that holds a given Secret (tool.credentials)", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, secret(ns, "github", map[string]string{"token": credentialValue}),
			secret(ns, "deploy", map[string]string{"config": credentialValue}), credTool(ns).Obj(),
			MakeToolPolicy("prod-token", ns).Stage(v1alpha1.StagePreExecute).
				VerdictRule("github", `tool.credentials.exists(c, c.secret == "github" && c.as == "env")`, v1alpha1.VerdictAsk).Obj(),
			MakeToolCall("c", ns).Tool("echo").Requester(AdminUser).Args(map[string]any{"text": "hi"}).Obj())
		call := &v1alpha1.ToolCall{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, call)).To(Succeed())
			g.Expect(call).To(HavePhase(v1alpha1.PhaseAwaitingApproval))
		}).WithContext(ctx).Should(Succeed())
		Expect(call).To(HaveVerdict(v1alpha1.VerdictAsk))
	})
})
