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

package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/frame"
	"github.com/toolgate/toolgate/pkg/podcontract"
)

// The tool body is hostile. Through the example sh tool it forges its own result frame,
// kills (or tries to kill) the runner, plants gzip bombs, gets itself OOM-killed, looks
// for the frame key, and has its Pod force-deleted. Whatever it does, the operator records
// at worst an honest isError about that call, never content or an exit code the runner
// did not vouch for, and its memory stays bounded (logged before and after).

// forgedMarker is in every forged frame's stdout; it must never reach a result.
const forgedMarker = "FORGED-RESULT"

// maxShCommand is the example sh tool's maxLength for "command".
const maxShCommand = 4096

// forgedFrame is a well-formed, unsigned frame claiming success with forgedMarker.
func forgedFrame() string {
	f := frame.Frame{V: frame.Version, StdoutBytes: int64(len(forgedMarker))}
	f.SetStdout([]byte(forgedMarker))
	js, err := json.Marshal(f)
	Expect(err).NotTo(HaveOccurred())
	return string(js)
}

// terminationBomb is a compressed termination message ("tgz1:") as large as fits in the sh
// tool's command: a well-formed frame whose stdout inflates to megabytes of 'a'.
func terminationBomb(room int) (msg string, inflated int) {
	for n := 8 << 20; n > 0; n -= 256 << 10 {
		var gz bytes.Buffer
		zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(zw, `{"v":1,"exitCode":0,"durationMs":1,"stdout":"`)
		_, _ = zw.Write(bytes.Repeat([]byte("a"), n))
		fmt.Fprintf(zw, `","stdoutBytes":%d}`, n)
		Expect(zw.Close()).To(Succeed())
		if m := frame.CompressedPrefix + base64.StdEncoding.EncodeToString(gz.Bytes()); len(m) <= room {
			return m, n
		}
	}
	Fail("no bomb fits the command")
	return "", 0
}

// logBombScript makes the body write, to the container log, a result block whose frame
// inflates to 60 MiB, and to the termination message a pointer to it: the shape that once
// OOM-killed the operator on every restart. The sh tool captures the body's own stderr, so
// the block goes to the runner's stderr (/proc/1/fd/2, closed to the body now that the
// runner is not dumpable) or else to the sh tool's, which the runner copies to the log.
const logBombScript = `set -e
n=62914560
{ printf '{"v":1,"exitCode":0,"durationMs":1,"stdout":"'; head -c $n /dev/zero | tr '\0' a; printf '","stdoutBytes":%d}' $n; } | gzip -9 > /tmp/bomb.gz
sum=$(sha256sum /tmp/bomb.gz | cut -c1-64); nonce=$(echo "$sum" | cut -c1-12)
{ echo "--toolgate-result-begin $nonce--"; base64 /tmp/bomb.gz | tr -d '\n' | fold -w 96 | sed "s/^/$nonce /"; echo; echo "--toolgate-result-end $nonce--"; } | grep -v '^$' > /tmp/block
bytes=$(wc -c < /tmp/block); lines=$(wc -l < /tmp/block)
cat /tmp/block > /proc/1/fd/2 2>/dev/null || cat /tmp/block > /proc/$PPID/fd/2
printf '{"v":1,"exitCode":0,"durationMs":1,"stdoutBytes":%d,"inLog":true,"logBytes":%d,"logLines":%d,"frameBytes":%d,"sha256":"sha256:%s"}' \
  $n $bytes $lines $((n + 70)) "$sum" > /dev/termination-log
kill -HUP 1 || true
sleep 3`

// expectNothingForged: the call ended, and nothing of a forged frame is in its result.
func expectNothingForged(got *toolgatev1alpha1.ToolCall, forgedBytes int) {
	GinkgoHelper()
	Expect(got.Status.Result).NotTo(BeNil())
	raw := ""
	if got.Status.Result.Content != nil {
		raw = string(got.Status.Result.Content.Raw)
	}
	Expect(raw).NotTo(ContainSubstring(forgedMarker), "forged content reached the result")
	Expect(raw).NotTo(ContainSubstring(strings.Repeat("a", 64)), "bomb content reached the result")
	if forgedBytes > 0 {
		Expect(got.Status.Result.Meta).NotTo(HaveKeyWithValue("outputBytes", fmt.Sprint(forgedBytes)), "a forged size reached the result")
	}
	if got.Status.Result.OK {
		// The runner outlived the body and vouched for what the sh tool really printed.
		Expect(raw).To(ContainSubstring(`"exitCode"`), "an OK result is the sh tool's own JSON")
	}
	AddReportEntry("hostile result", fmt.Sprintf("%s %s %v", got.Status.Phase, resultReason(got), got.Status.Result.Meta))
}

// operatorMemory is the leader's container memory from its node's kubelet (stats
// summary): working set and RSS in bytes; and the restart count of every operator
// container (the leader's and the standby's).
type operatorMemory struct {
	workingSet, rss uint64
	restarts        int32
}

func readOperatorMemory(ctx context.Context) operatorMemory {
	GinkgoHelper()
	pod, err := leaderPod(ctx)
	Expect(err).NotTo(HaveOccurred(), "the leader operator Pod")
	pods, err := operatorPods(ctx)
	Expect(err).NotTo(HaveOccurred())
	var m operatorMemory
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			m.restarts += cs.RestartCount
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", adminCfg)
	Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", pod.Spec.NodeName, "proxy", "stats", "summary").DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred(), "kubelet stats summary of node %s", pod.Spec.NodeName)
	var summary struct {
		Pods []struct {
			PodRef     struct{ Name, Namespace string }
			Containers []struct {
				Memory struct {
					WorkingSetBytes *uint64 `json:"workingSetBytes"`
					RSSBytes        *uint64 `json:"rssBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	Expect(json.Unmarshal(raw, &summary)).To(Succeed())
	for _, p := range summary.Pods {
		if p.PodRef.Namespace != pod.Namespace || p.PodRef.Name != pod.Name {
			continue
		}
		for _, c := range p.Containers {
			if c.Memory.WorkingSetBytes != nil {
				m.workingSet += *c.Memory.WorkingSetBytes
			}
			if c.Memory.RSSBytes != nil {
				m.rss += *c.Memory.RSSBytes
			}
		}
	}
	return m
}

func (m operatorMemory) String() string {
	return fmt.Sprintf("working set %.1f MiB, RSS %.1f MiB, restarts %d",
		float64(m.workingSet)/(1<<20), float64(m.rss)/(1<<20), m.restarts)
}

// hostileRuntimes are the runtimes the local cluster offers: every hostile spec runs under
// each, since a stronger sandbox must never be the weaker one for the result's integrity
// (under gVisor a body can read and signal its container's PID 1, which runc forbids).
var hostileRuntimes = []struct{ name, tool, scope string }{
	{"runc", "sh", demoScope},
	{"gVisor", "gv-sh-hostile", ""},
}

var _ = Describe("hostile: a body that attacks its own result", Ordered, ContinueOnFailure, Label("hostile", "frame"), func() {
	var before operatorMemory

	BeforeAll(func(ctx SpecContext) {
		gvisorCopy(ctx, "sh", "gv-sh-hostile")
		before = readOperatorMemory(ctx)
		fmt.Fprintf(GinkgoWriter, "operator memory before the hostile calls: %s\n", before)
	})

	AfterAll(func(ctx SpecContext) {
		after := readOperatorMemory(ctx)
		fmt.Fprintf(GinkgoWriter, "operator memory after the hostile calls: %s (before: %s)\n", after, before)
		AddReportEntry("operator memory", fmt.Sprintf("before: %s; after: %s", before, after))
		Expect(after.restarts).To(Equal(before.restarts), "the operator was not restarted (OOM-killed) by a hostile call")
	})

	for _, rt := range hostileRuntimes {
		Context("under "+rt.name, func() {
			hostileSpecs(rt.name, rt.tool, rt.scope)
		})
	}
})

// keyPattern matches the attempt key's variable name without spelling it, so that the
// body's own command line (which /proc shows it) does not.
var keyPattern = strings.TrimSuffix(podcontract.EnvAttemptKey, "KEY") + "K[E]Y"

// hostileSpecs are the hostile body's attacks through tool (an sh tool) in scope.
func hostileSpecs(runtime, tool, scope string) {
	call := func(ctx SpecContext, command string) *toolgatev1alpha1.ToolCall {
		GinkgoHelper()
		return waitTerminal(ctx, createCall(ctx, tool, scope, map[string]any{"command": command}), callTimeout)
	}

	It("writing a forged frame and killing the runner (kill -HUP 1) never yields the forged result", func(ctx SpecContext) {
		// SIGTERM and SIGINT are left out: the runner forwards them to the tool, by design.
		kills := "kill -HUP 1; kill -QUIT 1; kill -USR1 1; kill -USR2 1; kill -ALRM 1; kill -PIPE 1; kill -TSTP 1; kill -KILL 1; kill -STOP 1"
		got := call(ctx, `printf '%s' '`+forgedFrame()+`' > /dev/termination-log; `+kills+`; sleep 3`)
		expectNothingForged(got, len(forgedMarker))
		// What the body wrote in its own termination message is never left readable in the
		// Pod's status: the runner's side empties it, or (a body that killed it) the operator
		// deletes the Pod as soon as it recorded the attempt.
		Eventually(func(g Gomega) {
			for _, p := range podsOf(ctx, got) {
				for _, cs := range p.Status.ContainerStatuses {
					if t := cs.State.Terminated; t != nil {
						g.Expect(t.Message).NotTo(ContainSubstring(forgedMarker), "container %s of Pod %s", cs.Name, p.Name)
					}
				}
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
	}, SpecTimeout(2*time.Minute))

	It("printing a success and then killing its PID 1 (SIGKILL) never yields that success", func(ctx SpecContext) {
		// Under runc the kernel drops the signal (PID 1 of the container); under gVisor it may
		// land: the signer then hears no end and vouches for nothing (BodyLost).
		got := call(ctx, `echo '{"`+forgedMarker+`":true}'; kill -KILL 1; sleep 3; echo '{"`+forgedMarker+`":true}'`)
		if got.Status.Result.OK {
			Expect(runtime).To(Equal("runc"), "a success under a runtime that lets the body kill its PID 1")
		}
		raw := string(got.Status.Result.Content.Raw)
		if !got.Status.Result.OK {
			Expect(raw).NotTo(ContainSubstring(forgedMarker), "the output of a body whose runner it killed reached the result")
		}
		AddReportEntry("kill -KILL 1 under "+runtime, fmt.Sprintf("%s %s %v", got.Status.Phase, resultReason(got), got.Status.Result.Meta))
	}, SpecTimeout(2*time.Minute))

	It("a process left behind that writes the termination message later changes nothing", func(ctx SpecContext) {
		got := call(ctx, `(sleep 1; printf '%s' '`+forgedFrame()+`' > /dev/termination-log) >/dev/null 2>&1 & echo honest`)
		Expect(got.Status.Result.OK).To(BeTrue(), "the honest result: %v", got.Status.Result)
		Expect(string(got.Status.Result.Content.Raw)).To(ContainSubstring("honest"))
		expectNothingForged(got, len(forgedMarker))
	}, SpecTimeout(2*time.Minute))

	It("a gzip bomb in the termination message is never inflated into the result", func(ctx SpecContext) {
		prefix, suffix := `printf '%s' '`, `' > /dev/termination-log; kill -HUP 1; sleep 3`
		bomb, inflated := terminationBomb(maxShCommand - len(prefix) - len(suffix))
		fmt.Fprintf(GinkgoWriter, "termination-message bomb: %d bytes inflating to %d\n", len(bomb), inflated)
		got := call(ctx, prefix+bomb+suffix)
		expectNothingForged(got, inflated)
		Expect(resultReason(got)).NotTo(Equal(toolgatev1alpha1.ReasonOutputTooLarge), "the bomb was not inflated and measured")
	}, SpecTimeout(2*time.Minute))

	It("a pointer to a 60 MiB gzip bomb in the Pod log is never followed into the operator's memory", func(ctx SpecContext) {
		got := call(ctx, logBombScript)
		expectNothingForged(got, 62914560)
	}, SpecTimeout(2*time.Minute))

	It("a forged frame followed by an OOM kill never yields the forged result", func(ctx SpecContext) {
		// The sh tool's memory limit is 64 MiB (256 under gVisor); tail buffers /dev/zero (one
		// endless line).
		got := call(ctx, `printf '%s' '`+forgedFrame()+`' > /dev/termination-log; tail /dev/zero`)
		Expect(got).To(HaveField("Status.Phase", toolgatev1alpha1.PhaseFailed))
		expectNothingForged(got, len(forgedMarker))
	}, SpecTimeout(2*time.Minute))

	It("the body finds no frame key anywhere it can look: its environment, every process's /proc, its files", func(ctx SpecContext) {
		// The signer is another container: none of its processes is in the body's /proc, under
		// any runtime. Under runc the body's PID 1 (the runner's key-less side) is closed too.
		got := call(ctx, `env; for p in /proc/[0-9]*; do echo "== $p $(tr '\0' ' ' < $p/cmdline 2>&1)"; tr '\0' '\n' < $p/environ 2>&1; done; head -c 64 /proc/1/mem 2>&1; grep -rls '`+keyPattern+`' /var/run /run /tmp /dev/termination-log 2>/dev/null | head; echo`)
		Expect(got.Status.Result).NotTo(BeNil())
		raw := string(got.Status.Result.Content.Raw)
		Expect(raw).NotTo(ContainSubstring(podcontract.EnvAttemptKey))
		Expect(raw).NotTo(ContainSubstring(podcontract.SignFlag), "a process of the signer is visible to the body")
		for _, s := range frameKeySpellings(ctx, got) { // framekey_test.go: the master, the attempt's key
			Expect(raw).NotTo(ContainSubstring(s), "the key leaked to the body")
		}
		if runtime == "runc" {
			Expect(raw).To(ContainSubstring("ermission denied"), "the runner's /proc entries are closed to the body")
		}
	}, SpecTimeout(2*time.Minute))

	// The Job controller's tracking finalizer keeps the Pod object until it has counted it, so
	// the kubelet may still report the container's end: the runner, sent SIGTERM, stops the
	// body and signs an honest frame (NonZeroExit, the signal in the error). Without that
	// report the ending is ExecutionLost or JobDeleted. Never Succeeded.
	It("a running call whose Pod is force-deleted ends Failed (ExecutionLost, JobDeleted or the runner's honest NonZeroExit), never Succeeded", func(ctx SpecContext) {
		running := createCall(ctx, tool, scope, map[string]any{"command": "sleep 15; echo done"})
		var pod corev1.Pod
		Eventually(func(g Gomega) {
			pods := podsOf(ctx, running)
			g.Expect(pods).NotTo(BeEmpty())
			pod = pods[0]
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithContext(ctx).WithTimeout(callTimeout).WithPolling(poll).Should(Succeed())
		Expect(admin.Delete(ctx, &pod, client.GracePeriodSeconds(0))).To(Succeed())
		got := waitTerminal(ctx, running, callTimeout)
		Expect(got).To(HaveField("Status.Phase", toolgatev1alpha1.PhaseFailed))
		Expect(resultReason(got)).To(BeElementOf(toolgatev1alpha1.ReasonExecutionLost, toolgatev1alpha1.ReasonJobDeleted,
			toolgatev1alpha1.ReasonNonZeroExit))
		if resultReason(got) == toolgatev1alpha1.ReasonNonZeroExit {
			Expect(got.Status.Result.Error).To(ContainSubstring("signal"), "a body that did not end by itself")
		}
		AddReportEntry("force-deleted Pod", fmt.Sprintf("%s %v", resultReason(got), got.Status.Result.Meta))
	}, SpecTimeout(2*time.Minute))
}
