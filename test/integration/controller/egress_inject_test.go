package controller_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/egress"
	"github.com/toolgate/toolgate/pkg/podcontract"
	. "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/integration/internal/suite"
)

const (
	injectedToken = "ghp_injected-at-the-proxy-0123"
	testEgressCA  = "-----BEGIN CERTIFICATE-----\nMIIB (the toolgate egress CA)\n-----END CERTIFICATE-----\n"
)

var _ = Describe("Egress proxy: credentials injected at the proxy, grants bound to their Pod", Label("egress", "credentials", "restart"), Serial, func() {
	var (
		mu       sync.Mutex
		bindings []string // "path ip" of each authorised binding request
	)

	BeforeEach(func() {
		bindings = nil
		key := []byte(strings.Repeat("i", 32))
		records := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+egress.RecordsToken(key) {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			if strings.HasSuffix(r.URL.Path, "/pod") {
				var body struct {
					IP string `json:"ip"`
				}
				b, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(b, &body)
				mu.Lock()
				bindings = append(bindings, r.URL.Path+" "+body.IP)
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
				return
			}
			_ = json.NewEncoder(w).Encode(egress.Record{})
		}))
		DeferCleanup(records.Close)
		call := CallOptions{EgressProxy: EgressProxy{URL: "http://10.0.0.12:3128", RecordsURL: records.URL, Key: key,
			CA: []byte(testEgressCA), Namespace: "toolgate-system", PodLabels: map[string]string{"app.kubernetes.io/component": "egress-proxy"}}}
		Expect(mgr.Stop()).To(Succeed())
		mgr = suite.StartManager(env, ManagerOptions{Clock: fakeClock, Kubelet: kubelet, Call: call})
		DeferCleanup(func() {
			Expect(mgr.Stop()).To(Succeed())
			startManager()
		})
	})
	boundIPs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bindings...)
	}
	injectTool := func(ns string) *ToolWrapper {
		return MakeTool("long", ns).Image("example/long:1").Command("/long").
			EgressCredential("allowed.test", 443, "api", "token", "", "Bearer").EgressAllow("other.test", 443)
	}

	It("gives the body the CA and never the token, and binds the running attempt's grant to its Pod once", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		kubelet.Script("long", Outcome{Hold: true})
		create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns}, StringData: map[string]string{"token": injectedToken}},
			injectTool(ns).Obj(), MakeToolCall("c", ns).Tool("long").Requester(AdminUser).Args(map[string]any{}).Obj())
		job := &batchv1.Job{}
		pod := &corev1.Pod{}
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: podspec.JobName("c", 1)}, job)).To(Succeed())
			pods := &corev1.PodList{}
			g.Expect(k8sClient.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1))
			*pod = pods.Items[0]
			g.Expect(pod.Status.PodIP).NotTo(BeEmpty(), "the Pod runs")
		}).WithContext(ctx).Should(Succeed())

		By("the proxy is told the Pod's address for the call's first attempt")
		call := &v1alpha1.ToolCall{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c"}, call)).To(Succeed())
		want := "/records/" + string(call.UID) + "/1/pod " + SimulatedPodIP(pod.UID)
		Eventually(boundIPs).WithContext(ctx).Should(Equal([]string{want}))

		By("the body's container: the CA, the link volume for its bundle; the signer: the value by reference, to redact")
		spec := job.Spec.Template.Spec
		tool, signer := containerNamed(spec, podcontract.ToolContainerName), containerNamed(spec, podcontract.SignerContainerName)
		Expect(tool.Env).To(ContainElement(corev1.EnvVar{Name: podcontract.EnvEgressCA, Value: testEgressCA}))
		Expect(tool.VolumeMounts).To(ContainElement(HaveField("Name", podcontract.LinkVolume)))
		Expect(tool.Env).To(HaveEach(HaveField("ValueFrom", BeNil())), "the body's container gets no Secret")
		Expect(signer.Env).To(ContainElement(corev1.EnvVar{Name: podcontract.EnvRedactEgressPrefix + "0", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "api"}, Key: "token"}}}))
		raw, err := json.Marshal(job)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(injectedToken), "the Job holds the token nowhere in clear")

		By("the binding is not repeated while the Pod runs or when it ends")
		Expect(kubelet.Finish(ctx, ns, job.Name, Outcome{Stdout: []byte("done")})).To(Succeed())
		ended := waitTerminal(ctx, ns, "c")
		Expect(ended).To(HavePhase(v1alpha1.PhaseSucceeded), explain(ended))
		Expect(boundIPs()).To(Equal([]string{want}))
		raw, err = json.Marshal(ended)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(injectedToken), "nor does the call")
	})

	It("ends the attempt CredentialMissing, naming the Secret, when the credential's Secret is missing: no Job", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		create(ctx, injectTool(ns).Obj(), MakeToolCall("c", ns).Tool("long").Requester(AdminUser).Args(map[string]any{}).Obj())
		call := waitTerminal(ctx, ns, "c")
		Expect(call).To(HavePhase(v1alpha1.PhaseFailed))
		Expect(call.Status.Result.Reason).To(BeEquivalentTo(v1alpha1.ReasonCredentialMissing), explain(call))
		Expect(conditionMessage(call, v1alpha1.ConditionExecuted)).To(ContainSubstring(`secret "api" not found (the credential for allowed.test:443)`))
		jobs := &batchv1.JobList{}
		Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
		Expect(jobs.Items).To(BeEmpty())
	})
})
