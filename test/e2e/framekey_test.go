package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/internal/podspec"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// Issue 22, items 3 and 4 on real Pods: the frame key is in no object a viewer reads, a
// pool Pod takes no arguments but the operator's, and a Pod moved into another tool's pool
// is never claimed.

// frameKeySpellings are the demo namespace's master (as the Secret holds it, and its bytes)
// and the call's attempt keys, in the encodings a leak could take.
func frameKeySpellings(ctx context.Context, call *toolgatev1alpha1.ToolCall) []string {
	GinkgoHelper()
	var secret corev1.Secret
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: podcontract.FrameKeySecret}, &secret)).To(Succeed())
	text := string(secret.Data[podcontract.FrameKeySecretKey])
	master, err := frame.ParseKey(text)
	Expect(err).NotTo(HaveOccurred(), "the operator made the namespace's master")
	out := []string{text, base64.StdEncoding.EncodeToString([]byte(text)), base64.StdEncoding.EncodeToString(master)}
	for _, a := range call.Status.Attempts {
		key := frame.AttemptKey(master, string(call.UID), int(a.Attempt))
		out = append(out, base64.RawURLEncoding.EncodeToString(key), base64.StdEncoding.EncodeToString(key))
	}
	return out
}

// kubectlYAML is `kubectl get KIND NAME -o yaml` in the demo namespace, as the admin.
func kubectlYAML(ctx context.Context, kind, name string) string {
	GinkgoHelper()
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", adminCfg, "-n", demoNS, "get", kind, name, "-o", "yaml").Output()
	Expect(err).NotTo(HaveOccurred(), "kubectl get %s %s", kind, name)
	return string(out)
}

var _ = Describe("the frame key: in no object a viewer reads", Label("framekey", "hostile"), func() {
	It("kubectl get pod/job -o yaml of a running call shows a secretKeyRef, never the key", func(ctx SpecContext) {
		// The demo's sleep tool stops at 5 s: a tool of its own keeps the body running long
		// enough to read its objects, and ends well within its timeout.
		createTool(ctx, toolgatetest.MakeTool("e2e-framekey-sleep", demoNS).Image(toolImage).
			Command("/tools/sleep").Timeout(time.Minute).Obj())
		call := createCall(ctx, "e2e-framekey-sleep", "", map[string]any{"seconds": 8})
		var running *toolgatev1alpha1.ToolCall
		var pod corev1.Pod
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, call)
			g.Expect(pods).NotTo(BeEmpty())
			pod = pods[0]
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			running = &toolgatev1alpha1.ToolCall{}
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), running)).To(Succeed())
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		jobs := jobsOf(ctx, running)
		Expect(jobs).To(HaveLen(1))
		objects := map[string]string{
			"job": kubectlYAML(ctx, "job", jobs[0].Name),
			"pod": kubectlYAML(ctx, "pod", pod.Name),
		}
		spellings := frameKeySpellings(ctx, running)
		keySecret := podcontract.AttemptKeySecret(jobs[0].Name)
		for kind, yaml := range objects {
			Expect(yaml).To(ContainSubstring(keySecret), "the %s references the attempt's own key Secret", kind)
			Expect(yaml).To(ContainSubstring("secretKeyRef"), "the %s references the attempt's key Secret", kind)
			Expect(yaml).NotTo(ContainSubstring(podcontract.FrameKeySecret), "the %s references the namespace's master", kind)
			for _, s := range spellings {
				Expect(yaml).NotTo(ContainSubstring(s), "the %s shows a frame key", kind)
			}
		}
		for _, name := range []string{podcontract.FrameKeySecret, keySecret} {
			err := agent.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, &corev1.Secret{})
			Expect(isForbidden(err)).To(BeTrue(), "an agent reads the Secret %s: %v", name, err)
		}
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "the call still verifies: %+v", got.Status.Result)
	}, SpecTimeout(3*time.Minute))
})

// adminAttach attaches to a Pod's tool container as the admin (who may attach but is not the
// operator): stdin in, stdout out, until the container ends or ctx does.
func adminAttach(ctx context.Context, pod corev1.Pod, stdin io.Reader, stdout io.Writer) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", adminCfg)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("attach").VersionedParams(&corev1.PodAttachOptions{
		Container: podcontract.SignerContainerName, Stdin: true, Stdout: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout})
}

// poolPodOf is the Tool's one Ready, unclaimed pool Pod.
func poolPodOf(ctx context.Context, tool string) corev1.Pod {
	GinkgoHelper()
	waitPool(ctx, tool, 1)
	var pods corev1.PodList
	Expect(admin.List(ctx, &pods, client.InNamespace(demoNS), client.MatchingLabels{poolLabel: tool})).To(Succeed())
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) && warmPod(&p) {
			return p
		}
	}
	Fail("no Ready pool Pod of " + tool)
	return corev1.Pod{}
}

var _ = Describe("warm pool: a Handover only the operator can write", Label("warm", "framekey", "hostile"), func() {
	It("a forged Handover written through pods/attach is refused: the body never runs", func(ctx SpecContext) {
		warmTool(ctx, "echo", "e2e-warm-forgery", 1, nil)
		pod := poolPodOf(ctx, "e2e-warm-forgery")
		args := []byte(`{"message":"` + forgedMarker + `"}`)
		line, err := frame.EncodeHandover(frame.Handover{CallUID: "f0f0f0f0-forged", Attempt: 1, Arguments: args,
			ArgumentsDigest: frame.DigestOf(args), Auth: []string{strings.Repeat("A", 43)}})
		Expect(err).NotTo(HaveOccurred())
		var stdout bytes.Buffer
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_ = adminAttach(actx, pod, bytes.NewReader(line), &stdout) // ends with the container

		var term *corev1.ContainerStateTerminated
		Eventually(func(g Gomega) {
			var p corev1.Pod
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(&pod), &p)).To(Succeed())
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == podcontract.SignerContainerName { // the frame is the signer's
					term = cs.State.Terminated
				}
			}
			g.Expect(term).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
		Expect(term.ExitCode).To(BeEquivalentTo(frame.ExitRunnerError))
		Expect(term.Message).NotTo(HavePrefix(frame.SignedPrefix), "the refusal vouches for nothing")
		var f frame.Frame
		Expect(json.Unmarshal([]byte(term.Message), &f)).To(Succeed())
		Expect(f.Reason).To(Equal(frame.ReasonHandoverRefused))
		Expect(f.Stdout).To(BeEmpty(), "the body ran the forged arguments")
		if msg, ok := frame.LastResultLine(stdout.Bytes()); ok {
			Expect(msg).To(Equal(term.Message), "the attach stream carries the same refusal")
		}
		AddReportEntry("forged handover", fmt.Sprintf("exit %d, %s: %s", term.ExitCode, f.Reason, f.Error))

		By("the pool replaces the spent Pod")
		Expect(poolPodOf(ctx, "e2e-warm-forgery").Name).NotTo(Equal(pod.Name))
	}, SpecTimeout(3*time.Minute))

	It("a call that claims a Pod whose stdin someone else wrote to ends isError, never Succeeded", func(ctx SpecContext) {
		warmTool(ctx, "echo", "e2e-warm-taken", 1, nil)
		pod := poolPodOf(ctx, "e2e-warm-taken")
		// The attacker holds the Pod's stdin with half a line: the Pod stays Ready, and the
		// operator's Handover, when a call claims it, lands behind the attacker's bytes.
		actx, cancel := context.WithCancel(ctx)
		DeferCleanup(cancel)
		half := &halfLine{ctx: actx, sent: make(chan struct{}),
			data: []byte(`{"arguments":"` + base64.StdEncoding.EncodeToString([]byte(`{"message":"`+forgedMarker+`"}`)))}
		go func() { _ = adminAttach(actx, pod, half, io.Discard) }()
		Eventually(half.sent).WithContext(ctx).WithTimeout(30*time.Second).Should(BeClosed(), "the attach took the half line")

		call := createCall(ctx, "e2e-warm-taken", "", map[string]any{"message": "honest"})
		got := waitTerminal(ctx, call, callTimeout)
		Expect(got.Status.Attempts).NotTo(BeEmpty())
		AddReportEntry("call on a Pod whose handover was taken", fmt.Sprintf("path %q pod %s: %s %v",
			got.Status.Attempts[0].Path, got.Status.Attempts[0].PodName, resultReason(got), got.Status.Result.Meta))
		Expect(got.Status.Attempts[0].PodName).To(Equal(pod.Name), "the call claimed the attacked Pod")
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
		Expect(got.Status.Result.IsError).To(BeTrue())
		expectNothingForged(got, len(forgedMarker))
	}, SpecTimeout(3*time.Minute))
})

var _ = Describe("warm pool: a Pod moved into another tool's pool", Label("warm", "framekey", "hostile"), func() {
	It("is never claimed: the call runs its own tool's body", func(ctx SpecContext) {
		body := func(name string) func(*toolgatev1alpha1.ToolSpec) {
			return func(s *toolgatev1alpha1.ToolSpec) {
				s.Parameters = nil
				s.Body.Command = []string{"/bin/busybox", "sh", "-c", `echo '{"body":"` + name + `"}'`}
			}
		}
		warmTool(ctx, "sleep", "e2e-imposter-a", 1, body("a"))
		warmTool(ctx, "sleep", "e2e-imposter-b", 1, body("b"))
		imposter := poolPodOf(ctx, "e2e-imposter-a")
		own := poolPodOf(ctx, "e2e-imposter-b")
		var b toolgatev1alpha1.Tool
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: "e2e-imposter-b"}, &b)).To(Succeed())

		By("timing the live GET of a pool Pod, which a claim's check adds")
		var took []time.Duration
		for range 20 {
			start := time.Now()
			Expect(admin.Get(ctx, client.ObjectKeyFromObject(&own), &corev1.Pod{})).To(Succeed())
			took = append(took, time.Since(start))
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		AddReportEntry("pool Pod GET (the claim check), from the test", fmt.Sprintf("median %v, max %v", took[len(took)/2], took[len(took)-1]))

		By("moving tool a's idle Pod into tool b's pool: its labels and its owner")
		moved := imposter.DeepCopy()
		moved.Labels[poolLabel] = podspec.ToolLabelValue(b.Name)
		moved.Labels[podcontract.LabelTemplate] = own.Labels[podcontract.LabelTemplate]
		moved.OwnerReferences = []metav1.OwnerReference{{APIVersion: toolgatev1alpha1.GroupVersion.String(), Kind: "Tool",
			Name: b.Name, UID: b.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		Expect(admin.Patch(ctx, moved, client.MergeFrom(&imposter))).To(Succeed())

		got := warmOrColdCall(ctx, "e2e-imposter-b")
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
		Expect(string(got.Status.Result.Content.Raw)).To(MatchJSON(`{"body":"b"}`), "the call ran another tool's body")
		Expect(got.Status.Attempts[0].PodName).NotTo(Equal(imposter.Name))
		Eventually(func(g Gomega) {
			var p corev1.Pod
			err := admin.Get(ctx, client.ObjectKeyFromObject(&imposter), &p)
			g.Expect(apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil).To(BeTrue(), "the moved Pod is kept")
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	}, SpecTimeout(3*time.Minute))
})

// warmOrColdCall makes one call of tool and waits for it, wherever it ran.
func warmOrColdCall(ctx context.Context, tool string) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	got := waitTerminal(ctx, createCall(ctx, tool, "", map[string]any{}), callTimeout)
	Expect(got.Status.Attempts).To(HaveLen(1))
	return got
}

// halfLine is an attacker's stdin: some bytes without a newline, then nothing until ctx ends
// (the stream stays open). sent closes when the stream came back for more: it has sent them.
type halfLine struct {
	ctx  context.Context
	data []byte
	sent chan struct{}
	done bool
}

func (h *halfLine) Read(p []byte) (int, error) {
	if len(h.data) > 0 {
		n := copy(p, h.data)
		h.data = h.data[n:]
		return n, nil
	}
	if !h.done {
		h.done = true
		close(h.sent)
	}
	<-h.ctx.Done()
	return 0, io.EOF
}
