package controller_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/workspace"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// credentialedFileTools are fileTools with "write" given a credential variable and file
// (Secrets github/token and deploy/config), and "read" given none.
func credentialedFileTools(ns string) []client.Object {
	return []client.Object{
		MakeTool("write", ns).Image("example/write:1").Command("/write").Workspace(v1alpha1.WorkspaceReadWrite).
			SecretEnv("GITHUB_TOKEN", "github", "token").SecretFile("deploy.conf", "deploy", "config").Obj(),
		MakeTool("read", ns).Image("example/read:1").Command("/read").Workspace(v1alpha1.WorkspaceReadOnly).Obj(),
	}
}

// recordedOn decodes the record of credentials on the session's claim (none: absent).
func recordedOn(ctx SpecContext, g Gomega, ns, claim string) []podcontract.WorkspaceCredential {
	pvc, err := getClaim(ctx, ns, claim)
	g.Expect(err).To(Succeed())
	var refs []podcontract.WorkspaceCredential
	if raw, ok := pvc.Annotations[podcontract.AnnotationWorkspaceCredentials]; ok {
		g.Expect(json.Unmarshal([]byte(raw), &refs)).To(Succeed(), raw)
	}
	return refs
}

// podTemplateOf is the Pod template of a call's first attempt.
func podTemplateOf(ctx SpecContext, ns, call string) corev1.PodSpec {
	GinkgoHelper()
	job := &batchv1.Job{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName(call, 1)}, job)).To(Succeed())
	return job.Spec.Template.Spec
}

func containerNamed(spec corev1.PodSpec, name string) corev1.Container {
	GinkgoHelper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	Fail("no container " + name)
	return corev1.Container{}
}

// redactVar is what the signer gets for the i-th recorded credential.
func redactVar(i int, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: podcontract.EnvRedactPrefix + strconv.Itoa(i), ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key, Optional: ptr.To(true)}}}
}

var _ = Describe("Credentials a session's workspace may hold", Label("workspace", "credentials"), func() {
	secret := func(ns, name, key string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{key: credentialValue + "-" + name}}
	}

	It("records a ReadWrite call's credentials on its claim, and every later call of the session redacts them in its signer only", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scriptFileTools()
		create(ctx, secret(ns, "github", "token"), secret(ns, "deploy", "config"),
			MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).Obj())
		create(ctx, credentialedFileTools(ns)...)
		claim := workspace.ClaimName("coding", AdminUser, "s")
		create(ctx, fileCall("w", ns, "write", "coding", "s", "token.txt", "written by a credentialed body"))
		w := waitTerminal(ctx, ns, "w")
		Expect(w).To(HavePhase(v1alpha1.PhaseSucceeded), explain(w))
		Expect(recordedOn(ctx, Default, ns, claim)).To(Equal([]podcontract.WorkspaceCredential{
			{Secret: "deploy", Key: "config"}, {Secret: "github", Key: "token"}}), "references, sorted")
		pvc, err := getClaim(ctx, ns, claim)
		Expect(err).To(Succeed())
		raw, err := json.Marshal(pvc)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(credentialValue), "never a value")

		By("a later call of the session, of a tool without credentials, mounting ReadOnly")
		create(ctx, fileCall("r", ns, "read", "coding", "s", "token.txt", ""))
		r := waitTerminal(ctx, ns, "r")
		Expect(r).To(HavePhase(v1alpha1.PhaseSucceeded), explain(r))
		spec := podTemplateOf(ctx, ns, "r")
		Expect(containerNamed(spec, podcontract.SignerContainerName).Env).To(ContainElements(
			redactVar(0, "deploy", "config"), redactVar(1, "github", "token")))
		for _, e := range containerNamed(spec, podcontract.ToolContainerName).Env {
			Expect(e.Name).NotTo(HavePrefix(podcontract.EnvRedactPrefix), "the body is given nothing new")
			Expect(e.ValueFrom).To(BeNil(), "the body is given no Secret: %s", e.Name)
		}

		By("a Secret deleted since does not stop the session's calls")
		Expect(k8sClient.Delete(ctx, secret(ns, "github", "token"))).To(Succeed())
		create(ctx, fileCall("r2", ns, "read", "coding", "s", "token.txt", ""))
		r2 := waitTerminal(ctx, ns, "r2")
		Expect(r2).To(HavePhase(v1alpha1.PhaseSucceeded), explain(r2))
		Expect(containerNamed(podTemplateOf(ctx, ns, "r2"), podcontract.SignerContainerName).Env).To(ContainElement(redactVar(1, "github", "token")))

		By("another session of the requester records nothing")
		create(ctx, fileCall("other", ns, "read", "coding", "s2", "token.txt", ""))
		expectFailure(waitTerminal(ctx, ns, "other"), "NonZeroExit")
		Expect(recordedOn(ctx, Default, ns, workspace.ClaimName("coding", AdminUser, "s2"))).To(BeEmpty())
		Expect(containerNamed(podTemplateOf(ctx, ns, "other"), podcontract.SignerContainerName).Env).NotTo(
			ContainElement(HaveField("Name", HavePrefix(podcontract.EnvRedactPrefix))))
	})

	It("refuses a ReadWrite call whose credentials would take the record past its bound, before its Job, and runs the session's other calls", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		scriptFileTools()
		create(ctx, secret(ns, "github", "token"), secret(ns, "deploy", "config"),
			MakeToolScope("coding", ns).Workspace("1Gi", time.Hour).Obj())
		create(ctx, credentialedFileTools(ns)...)
		claim := workspace.ClaimName("coding", AdminUser, "s")
		create(ctx, fileCall("r", ns, "read", "coding", "s", "x", ""))
		expectFailure(waitTerminal(ctx, ns, "r"), "NonZeroExit") // the claim exists, with no record

		By("the record is full of other Secrets' keys")
		full := make([]podcontract.WorkspaceCredential, 0, podcontract.MaxWorkspaceCredentials)
		for i := range podcontract.MaxWorkspaceCredentials {
			full = append(full, podcontract.WorkspaceCredential{Secret: "other-" + strconv.Itoa(100+i), Key: "k"})
		}
		record, err := json.Marshal(full)
		Expect(err).NotTo(HaveOccurred())
		pvc, err := getClaim(ctx, ns, claim)
		Expect(err).To(Succeed())
		patch := client.MergeFrom(pvc.DeepCopy())
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, podcontract.AnnotationWorkspaceCredentials, string(record))
		Expect(k8sClient.Patch(ctx, pvc, patch)).To(Succeed())

		create(ctx, fileCall("w", ns, "write", "coding", "s", "x", "y"))
		w := waitTerminal(ctx, ns, "w")
		expectFailure(w, v1alpha1.ReasonWorkspaceCredentialsUnrecorded)
		Expect(meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionExecuted).Message).To(ContainSubstring("over the limit of 32"))
		Expect(w.Status.Result.Error).NotTo(ContainSubstring(claim), "the model reads no object names")
		Expect(jobExists(ctx, Default, ns, "w")).To(BeFalse(), "the body never ran")
		Expect(recordedOn(ctx, Default, ns, claim)).To(Equal(full), "unchanged")

		create(ctx, fileCall("r2", ns, "read", "coding", "s", "x", ""))
		expectFailure(waitTerminal(ctx, ns, "r2"), "NonZeroExit") // ran: no such file
		signer := containerNamed(podTemplateOf(ctx, ns, "r2"), podcontract.SignerContainerName)
		n := 0
		for _, e := range signer.Env {
			if strings.HasPrefix(e.Name, podcontract.EnvRedactPrefix) {
				n++
			}
		}
		Expect(n).To(Equal(podcontract.MaxWorkspaceCredentials))
	})
})
