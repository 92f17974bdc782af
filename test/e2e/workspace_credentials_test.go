package e2e

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/workspace"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Redaction that survives the session (issue 31 item 2), on real Pods and a real volume: a
// credentialed tool that mounts the session's workspace ReadWrite writes its token into a
// file and a file name; later calls of the session, of tools given no credentials, return
// them redacted.

// containerOf is the Pod's container of that name.
func containerOf(pod corev1.Pod, name string) corev1.Container {
	GinkgoHelper()
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	Fail("no container " + name + " in Pod " + pod.Name)
	return corev1.Container{}
}

var _ = Describe("session workspaces: credentials a session's files may hold", Label("workspace", "credentials"), func() {
	It("redacts a credentialed call's token, written into a file and a file name, from a later read_file and list of the session", func(ctx SpecContext) {
		scope := workspaceScope(ctx)
		secretName := "e2e-ws-cred-" + rand.String(5)
		value := "tg-e2e-ws-" + rand.String(16) // a file name's characters only
		credentialSecret(ctx, secretName, "token", value)
		leaky := scope + "-leaky"
		createTool(ctx, toolgatetest.MakeTool(leaky, demoNS).Scope(scope).Image(toolImage).RunnerInImage("").Timeout(60*time.Second).
			Workspace(toolgatev1alpha1.WorkspaceReadWrite).SecretEnv("API_TOKEN", secretName, "token").
			Command("/bin/busybox", "sh", "-c", `cd `+podcontract.WorkspaceMountPath+` && printf '%s' "$API_TOKEN" > token.txt && touch "name-$API_TOKEN" && echo written`).Obj())
		session := "e2e-" + rand.String(8)

		By("the credentialed call writes the token; its claim records the Secret key, never the value")
		w := succeeded(sessionCall(ctx, scope, session, leaky, map[string]any{}))
		Expect(string(w.Status.Result.Content.Raw)).To(ContainSubstring("written"))
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: workspace.ClaimName(scope, "agent", session)}, pvc)).To(Succeed())
		Expect(pvc.Annotations).To(HaveKeyWithValue(podcontract.AnnotationWorkspaceCredentials, `[{"secret":"`+secretName+`","key":"token"}]`))

		By("read_file and list, given no credentials, return it redacted")
		read := succeeded(sessionCall(ctx, scope, session, "read_file", map[string]any{"path": "token.txt"}))
		Expect(content(read)["content"]).To(Equal("[REDACTED]"), toolgatetest.Explain(read))
		Expect(read.Status.Result.Meta).To(HaveKeyWithValue("redactions", "1"))
		list := succeeded(sessionCall(ctx, scope, session, "list", map[string]any{}))
		Expect(content(list)["entries"]).To(ContainElements("token.txt", "name-[REDACTED]"), toolgatetest.Explain(list))

		By("the value is in neither result nor in the later Pods' logs; only their signers were given it")
		for _, c := range []*toolgatev1alpha1.ToolCall{read, list} {
			raw, err := json.Marshal(c.Status.Result)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(raw)).NotTo(ContainSubstring(value))
			pods := podsOf(ctx, c)
			Expect(pods).NotTo(BeEmpty())
			Expect(kubectlOut(ctx, "-n", demoNS, "logs", pods[0].Name, "--all-containers")).NotTo(ContainSubstring(value))
			Expect(containerOf(pods[0], podcontract.SignerContainerName).Env).To(ContainElement(HaveField("Name", podcontract.EnvRedactPrefix+"0")))
			Expect(containerOf(pods[0], podcontract.ToolContainerName).Env).NotTo(ContainElement(HaveField("Name", HavePrefix(podcontract.EnvRedactPrefix))))
		}
	}, SpecTimeout(4*time.Minute))
})
