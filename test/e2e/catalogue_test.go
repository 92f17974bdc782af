package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pkg/toolgatetest"
)

// The adversarial catalogue's rows that need real Pods: a real image pull, a real runtime
// starting (or failing to start) a binary, a real runner reading hundreds of MB. The
// envtest catalogue, with the table of every other hostile input, is
// test/integration/catalogue/cases_test.go; docs/adversarial.md describes both.

// e2eRow is one hostile body on the real cluster and the exact outcome it must have.
type e2eRow struct {
	id      string
	hostile string
	// tool shapes the row's Tool (object and tool name e2e-cat-<id>, the example tools
	// image, busybox sh -c script unless command is set, runner in the image).
	script  string
	command []string
	mutate  func(w *toolgatetest.ToolWrapper)
	// wait bounds the wait for the terminal phase (default callTimeout).
	wait time.Duration

	phase   toolgatev1alpha1.ToolCallPhase
	reason  string
	message string // a regexp result.error matches
	content string // the exact JSON content of a Succeeded call
	meta    map[string]string
}

var e2eCatalogue = []e2eRow{
	{id: "missing-image", hostile: "an image that is in no registry it can reach (ErrImagePull, ImagePullBackOff): ends at the deadline",
		mutate: func(w *toolgatetest.ToolWrapper) {
			w.Image("registry.invalid/private/catalogue:1").Timeout(5 * time.Second)
		},
		wait:  2 * time.Minute,
		phase: toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonImageNeverStarted, message: `^the tool could not be started$`},
	// runc finds ENOEXEC only at the execve in its init process: the kubelet reports an
	// ordinary exit 1 ("Error"), the error text is in the container log, and there is no
	// frame — ExecutionLost, with the kubelet's reason and exit code in meta.
	{id: "wrongarch-entrypoint", hostile: "the container's entrypoint (the runner) is a binary for another architecture",
		mutate: func(w *toolgatetest.ToolWrapper) { w.RunnerInImage("/testdata/wrongarch") },
		phase:  toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonExecutionLost, message: `^the tool's execution ended without a result$`,
		meta: map[string]string{"kubernetesReason": "Error", "containerExitCode": "1"}},
	// runc checks the entrypoint's mode before it starts the container: StartError.
	{id: "notexec-entrypoint", hostile: "the container's entrypoint is a text file (not executable): the runtime cannot start it",
		mutate: func(w *toolgatetest.ToolWrapper) { w.RunnerInImage("/samples/hello.txt") },
		phase:  toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonImageNeverStarted, message: `^the tool could not be started$`},
	{id: "wrongarch-body", hostile: "the tool body is a binary for another architecture: the runner cannot start it",
		command: []string{"/testdata/wrongarch"},
		phase:   toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonNonZeroExit, message: `exited with code 126: StartError: .*exec format error`,
		meta: map[string]string{"exitCode": "126"}},
	{id: "notexec-body", hostile: "the tool body is a text file (not executable)",
		command: []string{"/samples/hello.txt"},
		phase:   toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonNonZeroExit, message: `exited with code 126: StartError: .*permission denied`},
	{id: "stdout-300mb", hostile: "a body writing 300 MB to stdout: the runner keeps 1 MiB and counts the rest",
		script: `head -c 314572800 /dev/zero | tr '\0' a`, wait: 3 * time.Minute,
		phase: toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonOutputTooLarge, message: `^the tool's output \(314572800 bytes\) is over the output limit$`,
		meta: map[string]string{"truncated": "true", "outputBytes": "314572800"}},
	{id: "output-then-sigkill", hostile: "a body that prints, then SIGKILLs itself",
		script: `echo partial; kill -KILL $$$$`, // the kubelet turns $$ in a command into $
		phase:  toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonNonZeroExit, message: `^the tool was terminated by signal SIGKILL`,
		meta: map[string]string{"exitCode": "137"}},
	{id: "nul-bytes", hostile: "NUL bytes in stdout",
		script: `printf 'a\000b'`,
		phase:  toolgatev1alpha1.PhaseSucceeded, reason: toolgatev1alpha1.ReasonSucceeded, content: `"a\u0000b"`},
	{id: "not-utf8", hostile: "stdout that is not UTF-8",
		script: `printf 'ok\377\376'`,
		phase:  toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonOutputNotUTF8, message: `^the tool's output is not valid UTF-8 text$`},
	{id: "iserror-body", hostile: `a body printing {"isError":true,"error":"boom"}`,
		script: `printf '{"isError":true,"error":"boom"}'`,
		phase:  toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonToolError, message: `^boom$`},
	{id: "exit-255", hostile: "exit code 255",
		script: `exit 255`,
		phase:  toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonNonZeroExit, message: `^the tool exited with code 255$`,
		meta: map[string]string{"exitCode": "255"}},
	{id: "numbers", hostile: "JSON numbers the API server re-encodes: the stored result still matches its digest",
		script: `printf '{"one":1.0,"exp":1E+2,"big":123456789012345678901234567890}'`,
		phase:  toolgatev1alpha1.PhaseSucceeded, reason: toolgatev1alpha1.ReasonSucceeded, content: `{"one":1,"exp":100,"big":1.2345678901234568e+29}`},
	{id: "beyond-float64", hostile: `stdout {"n":1e400}, JSON the API server cannot store: the call still ends`,
		script: `printf '{"n":1e400}'`,
		phase:  toolgatev1alpha1.PhaseFailed, reason: toolgatev1alpha1.ReasonOperatorError, message: `^the call's result could not be represented as JSON$`},
}

var _ = Describe("catalogue: hostile bodies on real Pods", Ordered, ContinueOnFailure, Label("catalogue", "hostile"), func() {
	var before operatorMemory
	BeforeAll(func(ctx SpecContext) { before = readOperatorMemory(ctx) })

	for _, r := range e2eCatalogue {
		It(r.id+": "+r.hostile, func(ctx SpecContext) { runE2ERow(ctx, r) }, SpecTimeout(4*time.Minute))
	}

	It("leaves the operator healthy: not restarted, and a plain echo call still succeeds", func(ctx SpecContext) {
		after := readOperatorMemory(ctx)
		AddReportEntry("operator after the catalogue", fmt.Sprintf("before: %s; after: %s", before, after))
		Expect(after.restarts).To(Equal(before.restarts), "the operator was not restarted")
		got := waitTerminal(ctx, createCall(ctx, "echo", demoScope, map[string]any{"message": "still here"}), callTimeout)
		Expect(got).To(toolgatetest.HavePhase(toolgatev1alpha1.PhaseSucceeded), "result %+v", got.Status.Result)
	}, SpecTimeout(2*time.Minute))
})

func runE2ERow(ctx SpecContext, r e2eRow) {
	name := "e2e-cat-" + r.id
	w := toolgatetest.MakeTool(name, demoNS).Image(toolImage).RunnerInImage("").Timeout(60 * time.Second)
	if r.command != nil {
		w.Command(r.command...)
	} else {
		w.Command("/bin/busybox", "sh", "-c", r.script)
	}
	if r.mutate != nil {
		r.mutate(w)
	}
	createTool(ctx, w.Obj())
	wait := r.wait
	if wait == 0 {
		wait = callTimeout
	}
	got := waitTerminal(ctx, createCall(ctx, name, "", map[string]any{}), wait)
	res := got.Status.Result
	Expect(got).To(toolgatetest.HavePhase(r.phase), "result %+v", res)
	Expect(res.Reason).To(Equal(r.reason), "result %+v", res)
	Expect(res.IsError).To(Equal(r.phase != toolgatev1alpha1.PhaseSucceeded))
	if r.message != "" {
		Expect(res.Error).To(MatchRegexp(r.message))
	}
	if r.content != "" {
		Expect(res.Content).NotTo(BeNil())
		Expect(res.Content.Raw).To(MatchJSON(r.content))
	}
	for k, v := range r.meta {
		Expect(res.Meta).To(HaveKeyWithValue(k, v))
	}
	expectStoredDigest(got)
	AddReportEntry(r.id, fmt.Sprintf("%s %s %q %v", got.Status.Phase, res.Reason, res.Error, res.Meta))
}

// expectStoredDigest recomputes the result's digest from the stored result.
func expectStoredDigest(call *toolgatev1alpha1.ToolCall) {
	GinkgoHelper()
	digest, err := toolgatetest.StoredResultDigest(call)
	Expect(err).NotTo(HaveOccurred())
	Expect(digest).To(Equal(call.Status.ResultDigest), "the stored result is the one its digest was made of")
}
