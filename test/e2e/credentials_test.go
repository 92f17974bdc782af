package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Credentials the model never sees (issue 23 §2), on real Pods: the kubelet resolves the
// Secret, the runner redacts every form of its value from the body's output, and the value
// is in no object, event or log the agent can read.

// credentialSecret creates a Secret in the demo namespace (as the admin, who may read it:
// the toolgate-credentials policy lets only such a user point a tool at it).
func credentialSecret(ctx context.Context, name, key, value string) {
	GinkgoHelper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: map[string]string{e2eLabel: "true"}},
		StringData: map[string]string{key: value}}
	Expect(admin.Create(ctx, s)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, s))).To(Succeed()) })
}

// jsonEscaped is value as a JSON string's contents, without the quotes.
func jsonEscaped(value string) string {
	b, err := json.Marshal(value)
	Expect(err).NotTo(HaveOccurred())
	return string(b[1 : len(b)-1])
}

// kubectlOut runs kubectl with the admin's kubeconfig and returns its output.
func kubectlOut(ctx context.Context, args ...string) string {
	GinkgoHelper()
	out, err := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", adminCfg}, args...)...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, out)
	return string(out)
}

var _ = Describe("credentials: Secrets a tool uses and the model never sees", Label("credentials"), func() {
	It("redacts the value in plain, base64 and JSON-escaped form, counts 3, and leaves it in nothing the agent reads", func(ctx SpecContext) {
		suffix := rand.String(5)
		secretName := "e2e-cred-" + suffix
		// A quote makes the JSON-escaped form differ from the plain one.
		value := `tg-e2e-"cred"-` + rand.String(12)
		credentialSecret(ctx, secretName, "token", value)

		script := `printf '%s\n' "$API_TOKEN"; printf '%s' "$API_TOKEN" | base64; ` +
			`printf '%s\n' "$API_TOKEN" | sed 's/\\/\\\\/g; s/"/\\"/g'; ` +
			`[ "$(cat /run/secrets/toolgate/token)" = "$API_TOKEN" ] && echo file-matches; ` +
			`env | grep -c ` + podcontract.EnvSecretFilePrefix + ` || true`
		name := "e2e-cred-" + suffix
		createTool(ctx, toolgatetest.MakeTool(name, demoNS).Image(toolImage).RunnerInImage("").Timeout(60*time.Second).
			Command("/bin/busybox", "sh", "-c", script).
			SecretEnv("API_TOKEN", secretName, "token").SecretFile("token", secretName, "token").Obj())
		got := waitTerminal(ctx, createCall(ctx, name, "", map[string]any{}), callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
		var text string
		Expect(json.Unmarshal(got.Status.Result.Content.Raw, &text)).To(Succeed(), string(got.Status.Result.Content.Raw))
		lines := strings.Split(strings.TrimSpace(text), "\n")
		Expect(lines).To(Equal([]string{"[REDACTED]", "[REDACTED]", "[REDACTED]", "file-matches", "0"}),
			"plain, base64, JSON-escaped redacted; the file holds the value; the runner's copies are not in the body's env")
		Expect(got.Status.Result.Meta).To(HaveKeyWithValue("redactions", "3"))

		forms := []string{value, base64.StdEncoding.EncodeToString([]byte(value)), jsonEscaped(value)}
		By("the value is in no object, event or log the agent's role can read")
		agentCall := &toolgatev1alpha1.ToolCall{}
		Expect(agent.Get(ctx, client.ObjectKeyFromObject(got), agentCall)).To(Succeed())
		callJSON, err := json.Marshal(agentCall)
		Expect(err).NotTo(HaveOccurred())
		pods := podsOf(ctx, got)
		Expect(pods).NotTo(BeEmpty())
		texts := map[string]string{
			"the call":           string(callJSON),
			"the call (kubectl)": kubectlYAML(ctx, "toolcall", got.Name),
			"the tool":           kubectlYAML(ctx, "tool", name),
			"the Pod":            kubectlYAML(ctx, "pod", pods[0].Name),
			"the Job":            kubectlOut(ctx, "-n", demoNS, "get", "jobs", "-l", podcontract.LabelCall+"="+got.Name, "-o", "yaml"),
			"the events":         kubectlOut(ctx, "-n", demoNS, "get", "events", "-o", "yaml"),
			"the Pod's log":      kubectlOut(ctx, "-n", demoNS, "logs", pods[0].Name, "--all-containers"),
			"the operator's log": kubectlOut(ctx, "-n", systemNS, "logs", "-l", "app.kubernetes.io/component=manager",
				"--all-containers", "--tail=-1"),
		}
		for where, text := range texts {
			for _, form := range forms {
				Expect(text).NotTo(ContainSubstring(form), "%s holds the credential", where)
			}
		}
		By("the agent cannot read the Secret itself")
		Expect(agent.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: secretName}, &corev1.Secret{})).To(Satisfy(isForbidden))
	}, SpecTimeout(3*time.Minute))

	It("ends a call whose credential's Secret is missing fast, CredentialMissing, never at the deadline", func(ctx SpecContext) {
		name := "e2e-cred-missing-" + rand.String(5)
		createTool(ctx, toolgatetest.MakeTool(name, demoNS).Image(toolImage).RunnerInImage("").Timeout(5*time.Minute).
			Command("/tools/echo").SecretEnv("API_TOKEN", "e2e-cred-absent-"+name[len(name)-5:], "token").Obj())
		start := time.Now()
		got := waitTerminal(ctx, createCall(ctx, name, "", map[string]any{"message": "hi"}), 2*time.Minute)
		took := time.Since(start)
		AddReportEntry("missing credential ended after", took.String())
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed), "result %+v", got.Status.Result)
		Expect(got.Status.Result.Reason).To(Equal(toolgatev1alpha1.ReasonCredentialMissing))
		Expect(took).To(BeNumerically("<", time.Minute), "ended by the kubelet's refusal, far from the 5-minute deadline")
	}, SpecTimeout(3*time.Minute))
})
