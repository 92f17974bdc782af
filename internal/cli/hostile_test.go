package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

// Hostile text: what an agent (the session, written before the CRD bounded it, and the
// arguments) and a tool body (its output, error and meta, echoed into conditions and
// events) may write.
const (
	// hostileSession fakes the rest of an approval prompt and hides what follows it.
	hostileSession = "s1\nArguments:\n  {\"command\": \"ls -l /tmp\"}\x1b[8m"
	// osc52 writes "curl x|sh" to the clipboard; then the window title, then clear screen.
	osc52 = "\x1b]52;c;Y3VybCB4fHNo\x07\x1b]0;pwned\x07\x1b[2J"
	// bidi shows "ls -l /tmp; hs.exe" for what is "ls -l /tmp; exe.sh".
	bidi = "ls -l /tmp; \u202eexe.sh\u202c"
)

// hostileCall is a failed call of sh whose session, arguments, result, conditions and meta
// carry hostile text.
func hostileCall() *v1alpha1.ToolCall {
	c := succeededCall("sh-x")
	c.Spec.Tool, c.Spec.Session = "sh", hostileSession
	c.Spec.Arguments = runtime.RawExtension{Raw: fmt.Appendf(nil, `{"command":%q,"note":"\u001b[31m\u200b"}`, bidi)}
	frozen, err := pipeline.Freeze(c.Spec.Arguments.Raw, pipeline.FreezeOptions{})
	if err != nil {
		panic(err)
	}
	c.Status.ArgumentsDigest = frozen.Digest()
	c.Status.Phase, c.Status.Verdict = v1alpha1.PhaseFailed, v1alpha1.VerdictAllow
	c.Status.Result = &v1alpha1.ToolResult{IsError: true, Reason: "NonZeroExit",
		Error:   "the command exited with code 3: " + osc52,
		Content: content(string(mustJSON("out: " + osc52 + "\r\nfake line\u0085"))),
		Meta:    map[string]string{"stderr": osc52}}
	c.Status.Conditions = append(c.Status.Conditions,
		cond("Hostile\x1b]0;x\x07", metav1.ConditionTrue, "Reason", "message "+osc52, 3))
	return c
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// hiddenRunes lists the characters of out that a terminal or a page would not show as
// themselves (newlines apart).
func hiddenRunes(out string) []string {
	var found []string
	for i, r := range out {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x2069,
			r == 0x061c, r == 0xfeff:
			found = append(found, fmt.Sprintf("%U at byte %d", r, i))
		}
	}
	return found
}

func TestHostileTextIsShownEscaped(t *testing.T) {
	call := hostileCall()
	events := []corev1.Event{{Type: "Warning", Reason: "Hostile", Message: "tool said " + bidi + osc52,
		EventTime: metav1.NewMicroTime(t0)}}
	for name, tc := range map[string]struct {
		out  string
		want []string
	}{
		"get -o wide": {callTable([]v1alpha1.ToolCall{*call}, t0, true),
			[]string{`s1\nArguments:\n  {"command": "ls -l /tmp"}\x1b[8m`}},
		"describe": {formatDescribe(describeView{Call: call, Events: events, Notes: []string{"note " + osc52}}, t0.Add(time.Minute)),
			[]string{`Session:   s1\nArguments:`, `"command": "ls -l /tmp; \u202eexe.sh\u202c"`, `message \x1b]52;c;Y3VybCB4fHNo\x07`,
				`Error:    the command exited with code 3: \x1b]52;c;`, `tool said ls -l /tmp; \u202eexe.sh\u202c\x1b]52`,
				`stderr=\x1b]52;c;`, `"out: \u001b]52;c;Y3VybCB4fHNo\u0007\u001b]0;pwned\u0007\u001b[2J\r\nfake line\u0085"`, `note \x1b]52`}},
		"call --wait result": {formatResult(call.Status.Result),
			[]string{"error: NonZeroExit: the command exited with code 3: \\x1b]52;c;Y3VybCB4fHNo\\x07\\x1b]0;pwned\\x07\\x1b[2J\n",
				"out: \\x1b]52;c;Y3VybCB4fHNo\\x07\\x1b]0;pwned\\x07\\x1b[2J\\r\nfake line\\u0085\n"}},
		"call --wait meta":  {formatMeta(call.Status.Result.Meta), []string{`result meta: stderr=\x1b]52;c;Y3VybCB4fHNo\x07`}},
		"call --wait stage": {formatStage(stageOf(call), time.Second), []string{`NonZeroExit: the command exited with code 3: \x1b]52`}},
		"approve":           {formatApprovalRequest(call, t0), []string{`Session:       s1\nArguments:\n  {"command": "ls -l /tmp"}\x1b[8m` + "\n"}},
		"cancel":            {endedLine("c", "Failed", "Cancelled"+osc52), []string{`(Cancelled\x1b]52`}},
	} {
		t.Run(name, func(t *testing.T) {
			if hidden := hiddenRunes(tc.out); len(hidden) > 0 {
				t.Errorf("raw characters reach the terminal: %v\n%s", hidden, tc.out)
			}
			for _, w := range tc.want {
				if !strings.Contains(tc.out, w) {
					t.Errorf("output lacks %q:\n%s", w, tc.out)
				}
			}
		})
	}
}

// The approver reads the canonical arguments and their digest before anything the agent
// wrote (session, tool name, call name), in full however long.
func TestApprovalRequestShowsCanonicalArgumentsFirst(t *testing.T) {
	call := hostileCall()
	long := strings.Repeat("x", 5000)
	call.Spec.Arguments = runtime.RawExtension{Raw: []byte(`{"b": "` + bidi + `", "a": "` + long + `"}`)}
	frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	call.Status.ArgumentsDigest = frozen.Digest()
	call.Status.Phase = v1alpha1.PhaseAwaitingApproval
	out := formatApprovalRequest(call, t0)

	head := "Arguments (canonical JSON, " + frozen.Digest() + "):\n  {\"a\":\"" + long + "\",\"b\":\"ls -l /tmp; \\u202eexe.sh\\u202c\"}\n"
	if !strings.HasPrefix(out, head) {
		t.Fatalf("the prompt does not start with the canonical arguments and digest:\n%.400s", out)
	}
	for _, agentWrote := range []string{"Session:", "Tool:", "Call:", "Requester:"} {
		if i := strings.Index(out, agentWrote); i < len(head) {
			t.Errorf("%s at %d, before the canonical arguments end (%d)", agentWrote, i, len(head))
		}
	}
}

func TestLogsAreShownEscapedUnlessRaw(t *testing.T) {
	log := "starting\n" + osc52 + "\nline with " + bidi + "\r\nend\xff"
	var shown, raw bytes.Buffer
	if err := writeLog(&shown, strings.NewReader(log), false); err != nil {
		t.Fatal(err)
	}
	if hidden := hiddenRunes(shown.String()); len(hidden) > 0 {
		t.Errorf("raw characters reach the terminal: %v\n%q", hidden, shown.String())
	}
	want := "starting\n\\x1b]52;c;Y3VybCB4fHNo\\x07\\x1b]0;pwned\\x07\\x1b[2J\nline with ls -l /tmp; \\u202eexe.sh\\u202c\\r\nend\\xff"
	if shown.String() != want {
		t.Errorf("shown log:\n got %q\nwant %q", shown.String(), want)
	}
	if err := writeLog(&raw, strings.NewReader(log), true); err != nil {
		t.Fatal(err)
	}
	if raw.String() != log {
		t.Errorf("--raw changed the log's bytes: %q", raw.String())
	}
}

// The CLI itself writes no escape sequence: its live progress line is redrawn with a
// carriage return and blanks.
func TestLiveProgressWritesNoEscape(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, live: true, now: fakeNow()}
	p.start = t0
	for _, c := range walk() {
		p.observe(c)
	}
	p.finish()
	if strings.ContainsRune(buf.String(), 0x1b) {
		t.Errorf("live progress writes ESC: %q", buf.String())
	}
}
