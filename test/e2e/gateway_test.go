package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// gatewayName is the chart's gateway Deployment and Service (make up enables it for
// toolgate-demo, charts/toolgate/ci/local-values.yaml).
const gatewayName = release + "-gateway"

// The MCP gateway as the chart deploys it in the cluster, reached from this machine on its
// Service's cluster IP, with service-account tokens minted by kubectl for the audience
// toolgate.
var _ = Describe("the MCP gateway in the cluster", Ordered, Label("gateway", "mcp"), func() {
	const sa = "e2e-gateway-agent"
	user := "system:serviceaccount:" + demoNS + ":" + sa
	var url, token string

	BeforeAll(func(ctx SpecContext) {
		url, token = inClusterGateway(ctx, sa)
	}, NodeTimeout(3*time.Minute))

	It("refuses a request without a token, or with a token for another audience, with 401 and the metadata", func(ctx SpecContext) {
		apiToken := mintToken(ctx, sa, "") // the API server's own audience
		for _, tok := range []string{"", apiToken} {
			resp := postInitialize(ctx, url, tok)
			Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "token %.12q…", tok)
			Expect(resp.Header.Get("WWW-Authenticate")).To(ContainSubstring(`resource_metadata="`))
			Expect(resp.Header.Get("WWW-Authenticate")).To(ContainSubstring("/.well-known/oauth-protected-resource"))
		}
		Expect(postInitialize(ctx, url, token).StatusCode).To(Equal(http.StatusOK), "the toolgate token is accepted")
	}, SpecTimeout(time.Minute))

	It("may impersonate only the ServiceAccounts of its namespace (the chart's default), never a user or system:masters", func(ctx SpecContext) {
		gateway := "system:serviceaccount:" + systemNS + ":" + gatewayName
		may := func(resource, namespace, name string) bool {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   gateway,
				Groups: []string{"system:authenticated", "system:serviceaccounts", "system:serviceaccounts:" + systemNS},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: "impersonate", Resource: resource, Namespace: namespace, Name: name}}}
			Expect(admin.Create(ctx, sar)).To(Succeed())
			return sar.Status.Allowed
		}
		Expect(may("serviceaccounts", demoNS, sa)).To(BeTrue(), "a ServiceAccount of "+demoNS)
		Expect(may("groups", "", "system:serviceaccounts:"+demoNS)).To(BeTrue(), "its group")
		Expect(may("users", "", "kubernetes-admin")).To(BeFalse(), "a user")
		Expect(may("groups", "", "system:masters")).To(BeFalse(), "system:masters")
		Expect(may("serviceaccounts", "kube-system", "default")).To(BeFalse(), "a ServiceAccount of another namespace")
	}, SpecTimeout(time.Minute))

	It("runs one tools/call end to end as the token's ServiceAccount (Go MCP SDK)", func(ctx SpecContext) {
		session := connectBearer(ctx, url, token, "")
		tools, err := session.ListTools(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(toolNamesOf(tools)).To(ContainElements("echo", "sleep"))

		message := fmt.Sprintf("hi from the in-cluster gateway %d", time.Now().UnixNano())
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": message}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeFalse(), "result: %+v", res.Content)
		structured, err := json.Marshal(res.StructuredContent)
		Expect(err).NotTo(HaveOccurred())
		Expect(structured).To(MatchJSON(fmt.Sprintf(`{"message":%q}`, message)))

		call := gatewayCall(ctx, "echo", func(c *toolgatev1alpha1.ToolCall) bool {
			return string(c.Spec.Arguments.Raw) == fmt.Sprintf(`{"message":%q}`, message)
		})
		Expect(call.Spec.Requester).To(Equal(user), "the gateway acted as the token's identity")
		Expect(call.Spec.RequesterGroups).To(ContainElements("system:serviceaccounts", "system:serviceaccounts:"+demoNS))
		Expect(call).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded))
	}, SpecTimeout(2*time.Minute))

	It("gives the model a failing sh command's exit code, stdout and stderr", func(ctx SpecContext) {
		session := connectBearer(ctx, url, token, "")
		nonce := time.Now().UnixNano()
		command := fmt.Sprintf("echo out-%d; echo err-%d >&2; exit 3", nonce, nonce)
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "sh", Arguments: map[string]any{"command": command}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.IsError).To(BeTrue())
		Expect(res.Content).To(HaveLen(1))
		text := res.Content[0].(*mcp.TextContent).Text
		Expect(text).To(ContainSubstring(fmt.Sprintf("the command exited with code 3: err-%d", nonce)))
		Expect(text).To(ContainSubstring("exitCode: 3"))
		Expect(text).To(ContainSubstring(fmt.Sprintf("stdout (%d bytes):\nout-%d\n", len(fmt.Sprintf("out-%d\n", nonce)), nonce)))
		Expect(text).To(ContainSubstring(fmt.Sprintf("stderr (%d bytes):\nerr-%d", len(fmt.Sprintf("err-%d\n", nonce)), nonce)))
		structured, err := json.Marshal(res.StructuredContent)
		Expect(err).NotTo(HaveOccurred())
		var fields struct {
			ExitCode       int
			Stdout, Stderr string
		}
		Expect(json.Unmarshal(structured, &fields)).To(Succeed())
		Expect(fields.ExitCode).To(Equal(3))
		Expect(fields.Stdout).To(Equal(fmt.Sprintf("out-%d\n", nonce)))
		Expect(fields.Stderr).To(Equal(fmt.Sprintf("err-%d\n", nonce)))
		Expect(res.Meta).To(HaveKeyWithValue("toolgate.dev/phase", "Failed"))
		Expect(res.Meta).To(HaveKeyWithValue("toolgate.dev/reason", "ToolError"))
	}, SpecTimeout(2*time.Minute))

	It("serves an approval as an MCP Task: input_required, then the result once a person approves", func(ctx SpecContext) {
		approvalAsTask(ctx, url, token)
	}, SpecTimeout(3*time.Minute))

	It("cancels a running call when the client cancels the request: the Pod goes, the call stays Cancelled", func(ctx SpecContext) {
		createTool(ctx, longSleepTool())
		session := connectBearer(ctx, url, token, "2025-11-25")
		waitListed(ctx, session, longSleep)

		callCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		returned := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			_, err := session.CallTool(callCtx, &mcp.CallToolParams{Name: longSleep, Arguments: map[string]any{"seconds": 600}})
			returned <- err
		}()
		var call *toolgatev1alpha1.ToolCall
		Eventually(func(g Gomega) {
			call = gatewayCallIn(ctx, g, longSleep, toolgatev1alpha1.PhaseRunning)
			g.Expect(runningPod(ctx, g, call)).To(BeTrue(), "the body runs in a real Pod")
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })

		cancel()
		Eventually(returned).WithContext(ctx).WithTimeout(30 * time.Second).Should(Receive(HaveOccurred()))
		expectCancelledOnCluster(ctx, call, user)
	}, SpecTimeout(3*time.Minute))
})

// inClusterGateway waits for the chart's gateway and returns its URL, and a token for the
// audience toolgate of the ServiceAccount sa, created in the demo namespace and bound to
// toolgate-agent there (both deleted when the container ends).
func inClusterGateway(ctx context.Context, sa string) (url, token string) {
	GinkgoHelper()
	By("the gateway Deployment is available")
	Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: gatewayName}, &d)).To(Succeed(),
			"the chart's gateway (gateway.enabled in charts/toolgate/ci/local-values.yaml; run make up)")
		g.Expect(d.Status.AvailableReplicas).To(BeNumerically(">=", 1))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(poll).Should(Succeed())
	var svc corev1.Service
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: gatewayName}, &svc)).To(Succeed())
	url = fmt.Sprintf("http://%s:%d/", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)

	By("a ServiceAccount bound to toolgate-agent in " + demoNS)
	labels := map[string]string{e2eLabel: "true"}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: demoNS, Labels: labels}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: demoNS, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "toolgate-agent"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: demoNS}}}
	for _, obj := range []client.Object{account, binding} {
		Expect(client.IgnoreAlreadyExists(admin.Create(ctx, obj))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, obj))).To(Succeed()) })
	}
	return url, mintToken(ctx, sa, "toolgate")
}

// longSleep is a sleep tool whose timeout leaves time to cancel it.
const longSleep = "e2e-long-sleep"

func longSleepTool() *toolgatev1alpha1.Tool {
	return toolgatetest.MakeTool(longSleep, demoNS).Image(toolImage).Command("/tools/sleep").RunnerInImage("").
		Timeout(10 * time.Minute).ConcurrencySafe(true).
		Parameters(map[string]any{"type": "object", "properties": map[string]any{"seconds": map[string]any{"type": "number"}}}).Obj()
}

// waitListed waits until the gateway's tools/list on session has tool (a new Tool reaches
// the gateway's cache in a moment).
func waitListed(ctx context.Context, session *mcp.ClientSession, tool string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		tools, err := session.ListTools(ctx, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(toolNamesOf(tools)).To(ContainElement(tool))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}

// expectCancelledOnCluster waits until the call ended Failed/Cancelled, its Pod and Job
// gone, and checks the record is kept with its requester.
func expectCancelledOnCluster(ctx context.Context, call *toolgatev1alpha1.ToolCall, requester string) {
	GinkgoHelper()
	done := waitTerminal(ctx, call, callTimeout)
	Expect(done).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseFailed))
	Expect(done.Spec.Cancel).To(BeTrue())
	Expect(done.Status.Result.IsError).To(BeTrue())
	Expect(resultReason(done)).To(Equal(toolgatev1alpha1.ReasonCancelled))
	Expect(done.Spec.Requester).To(Equal(requester))
	Eventually(func(g Gomega) {
		g.Expect(podsOf(ctx, done)).To(BeEmpty(), "the Pod is gone")
		g.Expect(jobsOf(ctx, done)).To(BeEmpty(), "the Job is gone")
	}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
	kept := &toolgatev1alpha1.ToolCall{}
	Expect(admin.Get(ctx, client.ObjectKeyFromObject(done), kept)).To(Succeed(), "the record stays")
	Expect(kept.Status.ResultDigest).To(Equal(done.Status.ResultDigest))
}

// runningPod reports whether the call's Pod runs.
func runningPod(ctx context.Context, g Gomega, call *toolgatev1alpha1.ToolCall) bool {
	var pods corev1.PodList
	g.Expect(admin.List(ctx, &pods, client.InNamespace(demoNS),
		client.MatchingLabels{podcontract.LabelCall: call.Name})).To(Succeed())
	return len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning
}

// gatewayCall finds the one call the gateway made of tool that matches.
func gatewayCall(ctx context.Context, tool string, match func(*toolgatev1alpha1.ToolCall) bool) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	var calls toolgatev1alpha1.ToolCallList
	Expect(admin.List(ctx, &calls, client.InNamespace(demoNS),
		client.MatchingLabels{agentclient.LabelCreatedBy: "toolgate-mcp"})).To(Succeed())
	var found []*toolgatev1alpha1.ToolCall
	for i := range calls.Items {
		if c := &calls.Items[i]; c.Spec.Tool == tool && match(c) {
			found = append(found, c)
		}
	}
	Expect(found).To(HaveLen(1))
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, found[0]))).To(Succeed()) })
	return found[0]
}

// gatewayCallIn finds the one call of tool the gateway made that is in phase (and matches,
// if match is given).
func gatewayCallIn(ctx context.Context, g Gomega, tool string, phase toolgatev1alpha1.ToolCallPhase,
	match ...func(*toolgatev1alpha1.ToolCall) bool) *toolgatev1alpha1.ToolCall {
	var calls toolgatev1alpha1.ToolCallList
	g.Expect(admin.List(ctx, &calls, client.InNamespace(demoNS),
		client.MatchingLabels{agentclient.LabelCreatedBy: "toolgate-mcp"})).To(Succeed())
	var found []*toolgatev1alpha1.ToolCall
	for i := range calls.Items {
		if c := &calls.Items[i]; c.Spec.Tool == tool && c.Status.Phase == phase && (len(match) == 0 || match[0](c)) {
			found = append(found, c)
		}
	}
	g.Expect(found).To(HaveLen(1))
	return found[0]
}

// mintToken runs kubectl create token for the ServiceAccount (audience "" is the API
// server's own).
func mintToken(ctx context.Context, sa, audience string) string {
	GinkgoHelper()
	args := []string{"--kubeconfig", adminCfg, "create", "token", sa, "-n", demoNS, "--duration", "10m"}
	if audience != "" {
		args = append(args, "--audience", audience)
	}
	out, err := exec.CommandContext(ctx, kubectl, args...).Output()
	Expect(err).NotTo(HaveOccurred(), "kubectl create token: %s", stderrOf(err))
	return strings.TrimSpace(string(out))
}

// bearerTransport adds the token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// connectBearer connects the Go SDK's client over streamable HTTP with the token
// (protocol version "" is the SDK's default).
func connectBearer(ctx context.Context, url, token, version string) *mcp.ClientSession {
	GinkgoHelper()
	c := mcp.NewClient(&mcp.Implementation{Name: "toolgate-e2e", Version: "v0"}, nil)
	session, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(session.Close)
	return session
}

func postInitialize(ctx context.Context, url, token string) *http.Response {
	GinkgoHelper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(resp.Body.Close)
	return resp
}

func toolNamesOf(res *mcp.ListToolsResult) []string {
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names
}
