package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/creack/pty"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/display"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// What an agent and a tool body write reaches a person's terminal escaped: the real CLI
// in a pseudo-terminal, against a real call of the sh tool whose arguments carry bidi, DEL
// and C1 characters and whose body writes OSC 52 (clipboard), OSC 0 (window title) and
// clear-screen sequences to its result and to its Pod's log. No ESC byte reaches the
// terminal, and the approver reads the canonical arguments before anything the agent chose.
var _ = Describe("what callers and tools wrote reaches a terminal escaped", Ordered, Label("cli", "display"), func() {
	const (
		// hostileOutput is busybox printf's format for OSC 52 ("curl x|sh" to the
		// clipboard), OSC 0 (the window title) and clear screen.
		hostileOutput = `\033]52;c;Y3VybCB4fHNo\007\033]0;pwned\007\033[2J`
		// shownOutput is what the body prints, as the CLI shows it.
		shownOutput = `\x1b]52;c;Y3VybCB4fHNo\x07\x1b]0;pwned\x07\x1b[2J`
	)
	var bin, agentCfg, approverCfg string

	BeforeAll(func(ctx SpecContext) {
		bin = filepath.Join(GinkgoT().TempDir(), "toolgate")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/toolgate")
		build.Dir = root
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/toolgate: %s", out)
		agentCfg = kubeconfig("TOOLGATE_KUBECONFIG_AGENT", "kubeconfigs/agent.kubeconfig")
		approverCfg = kubeconfig("TOOLGATE_KUBECONFIG_APPROVER", "kubeconfigs/approver.kubeconfig")
	}, NodeTimeout(5*time.Minute))

	It("refuses a session that could pose as the approval prompt: the API, and the CLI before it", func(ctx SpecContext) {
		session := "s1\nArguments:\n  {\"command\": \"ls -l /tmp\"}\x1b[8m"
		call := toolgatetest.MakeToolCall("", demoNS).Tool("echo").Scope(demoScope).Session(session).Requester("agent").
			Args(map[string]any{"message": "hi"}).Label(e2eLabel, "true").Obj()
		call.GenerateName = "e2e-session-"
		Expect(agent.Create(ctx, call)).To(toolgatetest.BeAPIError(metav1.StatusReasonInvalid, "spec.session", "should match"))

		run := startInPty(ctx, bin, "call", "echo", "--kubeconfig", agentCfg, "-n", demoNS, "--scope", demoScope,
			"--session", session, "message=hi")
		code, out := run.wait(ctx)
		Expect(code).To(Equal(3), out)
		expectNoEscape(out)
		Expect(out).To(ContainSubstring(`--session "s1\nArguments:\n  {\"command\": \"ls -l /tmp\"}\x1b[8m"`))
	}, SpecTimeout(time.Minute))

	It("call --wait, approve, describe, logs and get show a hostile call without writing ESC; approve leads with the canonical arguments", func(ctx SpecContext) {
		// "ping" makes the demo's sh-network-needs-approval policy ask; the comment carries a
		// bidi override, DEL and a C1 CSI as they are into the canonical arguments.
		command := "p='" + hostileOutput + "'; printf \"$p\" > /proc/$PPID/fd/2 2>/dev/null; printf \"boom $p\" >&2; exit 3 # ping \u202eexe.sh\u202c\u007f\u009b"
		args, err := json.Marshal(map[string]any{"command": command})
		Expect(err).NotTo(HaveOccurred())
		frozen, err := pipeline.Freeze(args, pipeline.FreezeOptions{})
		Expect(err).NotTo(HaveOccurred())

		By("the agent calls sh and waits, in a terminal")
		caller := startInPty(ctx, bin, "call", "sh", "--kubeconfig", agentCfg, "-n", demoNS, "--scope", demoScope,
			"--session", "e2e-display", "--args", string(args), "--wait")
		Eventually(caller.out).WithContext(ctx).WithTimeout(callTimeout).Should(gbytes.Say(`call (\S+) awaits approval`))
		name := regexp.MustCompile(`call (\S+) awaits approval`).FindStringSubmatch(string(caller.out.Contents()))[1]
		call := &toolgatev1alpha1.ToolCall{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: demoNS, Name: name}, call)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(admin.Delete(ctx, call))).To(Succeed()) })
		Expect(call.Status.ArgumentsDigest).To(Equal(frozen.Digest()))

		By("the approver is shown the canonical arguments and their digest first, escaped, then what the agent chose")
		approve := startInPty(ctx, bin, "approve", name, "--kubeconfig", approverCfg, "-n", demoNS)
		Eventually(approve.out).WithContext(ctx).WithTimeout(30 * time.Second).Should(gbytes.Say(`Approve\? \[y/N\] `))
		prompt := crlf(string(approve.out.Contents()))
		expectNoEscape(prompt)
		shownArgs := display.Options{}.String(frozen.String())
		Expect(shownArgs).To(ContainSubstring(`# ping \u202eexe.sh\u202c\x7f\u009b"}`))
		head := "Arguments (canonical JSON, " + frozen.Digest() + "):\n  " + shownArgs + "\n"
		Expect(prompt).To(HavePrefix(head))
		for _, agentChose := range []string{"Call:          " + name, "Tool:          sh", "Session:       e2e-display", "Requester:     agent"} {
			Expect(prompt).To(ContainSubstring(agentChose))
			Expect(strings.Index(prompt, agentChose)).To(BeNumerically(">=", len(head)), agentChose)
		}
		_, err = approve.pty.Write([]byte("y\n"))
		Expect(err).NotTo(HaveOccurred())
		code, out := approve.wait(ctx)
		Expect(code).To(Equal(0), out)
		expectNoEscape(out)

		By("call --wait prints the body's error escaped and exits 1")
		code, out = caller.wait(ctx)
		Expect(code).To(Equal(1), out)
		expectNoEscape(out)
		Expect(out).To(ContainSubstring("error: ToolError: the command exited with code 3: boom " + shownOutput))

		By("describe shows the result and the arguments escaped")
		run := startInPty(ctx, bin, "describe", name, "--kubeconfig", adminCfg, "-n", demoNS)
		code, out = run.wait(ctx)
		Expect(code).To(Equal(0), out)
		expectNoEscape(out)
		Expect(out).To(ContainSubstring("boom " + shownOutput))
		Expect(out).To(ContainSubstring(`\u202eexe.sh\u202c\x7f\u009b`))

		By("logs shows what the body wrote to the Pod's log escaped; --raw and kubectl the exact bytes")
		pods := podsOf(ctx, call)
		Expect(pods).NotTo(BeEmpty())
		rawLog, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", adminCfg, "-n", demoNS, "logs", pods[0].Name, "-c", toolgatev1alpha1.SignerContainerName).Output()
		Expect(err).NotTo(HaveOccurred(), stderrOf(err))
		Expect(string(rawLog)).To(ContainSubstring("\x1b]52;c;Y3VybCB4fHNo\x07"), "the body wrote OSC 52 to its log")
		run = startInPty(ctx, bin, "logs", name, "--kubeconfig", adminCfg, "-n", demoNS)
		code, out = run.wait(ctx)
		Expect(code).To(Equal(0), out)
		expectNoEscape(out)
		Expect(out).To(ContainSubstring(shownOutput))
		raw, err := exec.CommandContext(ctx, bin, "logs", name, "--raw", "--kubeconfig", adminCfg, "-n", demoNS).Output()
		Expect(err).NotTo(HaveOccurred(), stderrOf(err))
		Expect(raw).To(Equal(rawLog), "logs --raw prints the log's bytes")

		By("get -o wide lists the call without ESC")
		run = startInPty(ctx, bin, "get", "-o", "wide", "--kubeconfig", agentCfg, "-n", demoNS)
		code, out = run.wait(ctx)
		Expect(code).To(Equal(0), out)
		expectNoEscape(out)
		Expect(out).To(MatchRegexp(`(?m)^` + name + ` +sh +Failed `))
	}, SpecTimeout(4*time.Minute))
})

// ptyRun is the CLI running with a pseudo-terminal as its stdin, stdout and stderr.
type ptyRun struct {
	cmd  *exec.Cmd
	pty  *os.File
	out  *gbytes.Buffer
	read chan struct{}
}

// startInPty starts bin with args on a new pseudo-terminal (100x200), copying all it
// writes to the terminal into out; it is killed when the spec ends.
func startInPty(ctx context.Context, bin string, args ...string) *ptyRun {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 100, Cols: 200})
	Expect(err).NotTo(HaveOccurred())
	r := &ptyRun{cmd: cmd, pty: f, out: gbytes.NewBuffer(), read: make(chan struct{})}
	go func() {
		defer close(r.read)
		_, _ = io.Copy(r.out, f) // ends with EIO once the CLI exited and closed the terminal
	}()
	DeferCleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = f.Close()
	})
	return r
}

// wait waits for the CLI to exit and returns its exit code and everything it wrote to the
// terminal, line ends as written (the terminal turns \n into \r\n: undone here).
func (r *ptyRun) wait(ctx context.Context) (int, string) {
	GinkgoHelper()
	err := r.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		Fail("running the CLI: " + err.Error())
	}
	Eventually(r.read).WithContext(ctx).WithTimeout(10 * time.Second).Should(BeClosed())
	return r.cmd.ProcessState.ExitCode(), crlf(string(r.out.Contents()))
}

func crlf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// expectNoEscape: not one ESC byte (nor a C1 CSI, nor a bidi override) reached the
// terminal, from the CLI or from what it showed.
func expectNoEscape(out string) {
	GinkgoHelper()
	Expect(bytes.IndexByte([]byte(out), 0x1b)).To(Equal(-1), "ESC written to the terminal:\n%q", out)
	Expect(out).NotTo(ContainSubstring("\u009b"), "C1 CSI written to the terminal")
	Expect(out).NotTo(ContainSubstring("\u202e"), "a bidi override written to the terminal")
}
