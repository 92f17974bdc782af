/*
Copyright 2026 The toolgate Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package e2e tests toolgate end to end against the real local cluster (`make up`): real
// kubelet, containerd, Jobs and Pods, the operator installed by its Helm chart and the
// examples of config/examples. `make test-e2e` runs it (the last step of `make test`).
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/podcontract"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

const (
	demoNS    = "toolgate-demo"
	systemNS  = "toolgate-system"
	release   = "toolgate"
	demoScope = "demo"
	toolImage = "toolgate.local/tools:dev"
	// e2eLabel marks every object this suite creates.
	e2eLabel = "toolgate.dev/e2e"
	// poll is the polling interval of this suite's Eventually: real Pods take seconds.
	poll = 250 * time.Millisecond
	// callTimeout bounds the wait for an ordinary call (a Pod start on a loaded 2-core node).
	callTimeout = 90 * time.Second
)

var (
	root     string
	kubectl  string
	adminCfg string
	admin    client.Client // .cluster/kubeconfig, system:masters
	agent    client.Client // user "agent", toolgate-agent in toolgate-demo
	approver client.Client // user "approver", toolgate-approver in toolgate-demo
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "toolgate e2e (real local cluster)")
}

// kubeconfig returns $env or the file under .cluster that `make up` writes.
func kubeconfig(env, rel string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return filepath.Join(root, ".cluster", rel)
}

func newClient(path string) client.Client {
	GinkgoHelper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	Expect(err).NotTo(HaveOccurred(), "kubeconfig %s (run make up first)", path)
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{Scheme: toolgatetest.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	root, err = toolgatetest.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	kubectl = filepath.Join(root, "bin", "k8s", "kubectl")
	adminCfg = kubeconfig("TOOLGATE_KUBECONFIG_ADMIN", "kubeconfig")
	admin = newClient(adminCfg)
	agent = newClient(kubeconfig("TOOLGATE_KUBECONFIG_AGENT", "kubeconfigs/agent.kubeconfig"))
	approver = newClient(kubeconfig("TOOLGATE_KUBECONFIG_APPROVER", "kubeconfigs/approver.kubeconfig"))

	By("the operator is available")
	waitOperatorAvailable(ctx)

	By("the example tools are registered and the scope is ready")
	for _, name := range []string{"echo", "sh", "sleep", "large", "whoami", "oom"} {
		waitToolRegistered(ctx, name)
	}
	Eventually(func(g Gomega) {
		var s toolgatev1alpha1.ToolScope
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: demoScope}, &s)).To(Succeed())
		g.Expect(s).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionReady, metav1.ConditionTrue, ""))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}, NodeTimeout(3*time.Minute))

// On failure: the operator's log, the namespace's events and the tail of the cluster's
// component logs, into the spec's report.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() || adminCfg == "" {
		return
	}
	var b strings.Builder
	run := func(title string, args ...string) {
		fmt.Fprintf(&b, "\n===== %s =====\n", title)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", adminCfg}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run()
		b.Write(out.Bytes())
	}
	// Every replica's log (the leader's and the standby's), each line prefixed with its Pod.
	selector := "app.kubernetes.io/name=" + release + ",app.kubernetes.io/component=manager"
	run("operator Pods and Lease", "get", "pods,leases", "-n", systemNS, "-o", "wide")
	run("operator logs", "logs", "-n", systemNS, "-l", selector, "--tail=200", "--all-containers", "--prefix")
	run("operator logs (previous)", "logs", "-n", systemNS, "-l", selector, "--tail=50", "--previous", "--prefix")
	run("events "+demoNS, "get", "events", "-n", demoNS, "--sort-by=.lastTimestamp")
	run("events "+systemNS, "get", "events", "-n", systemNS, "--sort-by=.lastTimestamp")
	run("toolcalls", "get", "toolcalls", "-n", demoNS, "-l", e2eLabel, "-o", "wide")
	run("jobs and pods", "get", "jobs,pods", "-n", demoNS, "-o", "wide")
	logs, _ := filepath.Glob(filepath.Join(root, ".cluster", "logs", "*.log"))
	for _, f := range logs {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(&b, "\n===== tail %s =====\n%s\n", f, strings.Join(lines, "\n"))
	}
	AddReportEntry("cluster state on failure", b.String(), ReportEntryVisibilityFailureOrVerbose)
})

func waitToolRegistered(ctx context.Context, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var t toolgatev1alpha1.Tool
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, &t)).To(Succeed())
		g.Expect(t).To(toolgatetest.HaveCondition(toolgatev1alpha1.ConditionRegistered, metav1.ConditionTrue, ""))
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
}

// createTool creates a Tool in toolgate-demo's namespace layer (as admin) and deletes it
// when the spec ends; it waits until it is Registered.
func createTool(ctx context.Context, t *toolgatev1alpha1.Tool) {
	GinkgoHelper()
	metav1.SetMetaDataLabel(&t.ObjectMeta, e2eLabel, "true")
	// The specs run in parallel processes (E2E_PROCS) and some share a tool's name (the long
	// sleep, the fetch tool): a name another spec holds is waited for, like a lock, until
	// that spec's cleanup deletes it.
	Eventually(func(g Gomega) {
		try := t.DeepCopy()
		err := admin.Create(ctx, try)
		g.Expect(apierrors.IsAlreadyExists(err)).To(BeFalse(), "tool %s is held by another spec", t.Name)
		g.Expect(err).NotTo(HaveOccurred())
		try.DeepCopyInto(t)
	}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, t))).To(Succeed())
	})
	waitToolRegistered(ctx, t.Name)
}

// createCall creates a call as the agent user (requester agent), with a generated name,
// and deletes it when the spec ends.
func createCall(ctx context.Context, tool, scope string, args any) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	call := toolgatetest.MakeToolCall("", demoNS).Tool(tool).Scope(scope).Requester("agent").
		Args(args).Label(e2eLabel, "true").Obj()
	call.GenerateName = "e2e-" + strings.ReplaceAll(tool, "_", "-") + "-"
	Expect(agent.Create(ctx, call)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed())
	})
	return call
}

func isTerminal(p toolgatev1alpha1.ToolCallPhase) bool {
	return p == toolgatev1alpha1.PhaseSucceeded || p == toolgatev1alpha1.PhaseFailed ||
		p == toolgatev1alpha1.PhaseDenied
}

// waitTerminal waits for the call to reach a terminal phase and returns it.
func waitTerminal(ctx context.Context, call *toolgatev1alpha1.ToolCall, timeout time.Duration) *toolgatev1alpha1.ToolCall {
	GinkgoHelper()
	got := &toolgatev1alpha1.ToolCall{}
	Eventually(func(g Gomega) {
		g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(call), got)).To(Succeed())
		g.Expect(isTerminal(got.Status.Phase)).To(BeTrue(), "phase %q", got.Status.Phase)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	return got
}

// resultReason is status.result.reason ("" without a result).
func resultReason(c *toolgatev1alpha1.ToolCall) string {
	if c.Status.Result == nil {
		return ""
	}
	return c.Status.Result.Reason
}

// jobsOf lists the Jobs of a call (label toolgate.dev/call; names fit a label here).
func jobsOf(ctx context.Context, call *toolgatev1alpha1.ToolCall) []batchv1.Job {
	GinkgoHelper()
	var jobs batchv1.JobList
	Expect(admin.List(ctx, &jobs, client.InNamespace(demoNS),
		client.MatchingLabels{podcontract.LabelCall: call.Name})).To(Succeed())
	return jobs.Items
}

// podsOf lists the Pods of a call.
func podsOf(ctx context.Context, call *toolgatev1alpha1.ToolCall) []corev1.Pod {
	GinkgoHelper()
	var pods corev1.PodList
	Expect(admin.List(ctx, &pods, client.InNamespace(demoNS),
		client.MatchingLabels{podcontract.LabelCall: call.Name})).To(Succeed())
	return pods.Items
}

func isForbidden(err error) bool { return apierrors.IsForbidden(err) }

// nodeAddress is the node's address (TOOLGATE_NODE_IP or what make up recorded).
func nodeAddress() string {
	GinkgoHelper()
	if ip := os.Getenv("TOOLGATE_NODE_IP"); ip != "" {
		return ip
	}
	data, err := os.ReadFile(filepath.Join(root, ".cluster", "pki", "node-ip"))
	Expect(err).NotTo(HaveOccurred(), "the node address (make up writes .cluster/pki/node-ip)")
	return strings.TrimSpace(string(data))
}

// approverToken is a token for the audience toolgate of a new ServiceAccount bound to the
// shipped toolgate-approver ClusterRole in the demo namespace (both go with the spec).
func approverToken(ctx context.Context, name string) string {
	GinkgoHelper()
	labels := map[string]string{e2eLabel: "true"}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: labels}}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: demoNS, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "toolgate-approver"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: demoNS}},
	}
	for _, o := range []client.Object{sa, binding} {
		Expect(admin.Create(ctx, o)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, o))).To(Succeed()) })
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", adminCfg)
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(demoNS).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"toolgate"}, ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}
