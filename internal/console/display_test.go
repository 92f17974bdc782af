package console

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
)

const (
	// osc52 writes the clipboard, sets the window title, clears the screen.
	osc52 = "\x1b]52;c;Y3VybCB4fHNo\x07\x1b]0;pwned\x07\x1b[2J"
	// bidi reads "ls -l /tmp; hs.exe" for the bytes "ls -l /tmp; exe.sh".
	bidi = "ls -l /tmp; \u202eexe.sh\u202c"
)

// hostileCall awaits approval; what its agent (session, arguments) and tool body (result,
// messages) wrote is hostile. Its tool presents the command as it is.
func hostileCall() *v1alpha1.ToolCall {
	deadline := metav1.NewTime(time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC))
	args := fmt.Appendf(nil, `{"command": %q, "z": "\u001b[8m\u200b"}`, bidi)
	frozen, err := pipeline.Freeze(args, pipeline.FreezeOptions{})
	if err != nil {
		panic(err)
	}
	return &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u1"},
		Spec: v1alpha1.ToolCallSpec{Tool: "sh", Requester: "alice", Session: "s1\nRequester: admin\u2066",
			Arguments: runtime.RawExtension{Raw: args}},
		Status: v1alpha1.ToolCallStatus{
			Phase: v1alpha1.PhaseAwaitingApproval, ArgumentsDigest: frozen.Digest(), ApprovalDeadline: &deadline,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionAdmitted, Message: "asks " + osc52}},
			Tool: &v1alpha1.ToolSnapshot{Name: "sh", Spec: &v1alpha1.ToolSpec{
				Presentation: &v1alpha1.Presentation{Call: `'$ ' + arguments.command`, Result: `'said ' + string(result.content)`}}},
			Result: &v1alpha1.ToolResult{IsError: true, Reason: "NonZeroExit", Error: "boom " + osc52,
				Content: &apiextensionsv1.JSON{Raw: []byte(`"out \u001b]52;c;eA==\u0007 \u202e\u0085"`)},
				Meta:    map[string]string{"stderr\u202e": osc52}},
		},
	}
}

// render renders page name with p as the console serves it.
func render(t *testing.T, name string, p page) string {
	t.Helper()
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := pages[name].ExecuteTemplate(&b, "layout", p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hiddenIn lists the characters of a page that a browser would act on or not show:
// controls (but newline), DEL, C1, bidi controls, zero-width characters, BOM.
func hiddenIn(out string) []string {
	var found []string
	for i, r := range out {
		switch {
		case r == '\n':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0x061c, r == 0xfeff,
			r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2060 && r <= 0x2069:
			found = append(found, fmt.Sprintf("%U at byte %d: %q", r, i, out[max(i-40, 0):min(i+40, len(out))]))
		}
	}
	return found
}

func TestPagesShowHostileTextEscaped(t *testing.T) {
	call := hostileCall()
	now := time.Date(2026, 12, 2, 6, 58, 0, 0, time.UTC)
	view := &CallView{Call: call, JobState: "Failed (" + osc52 + ")",
		Approval: &v1alpha1.ToolCallApproval{Spec: v1alpha1.ToolCallApprovalSpec{Decision: v1alpha1.DecisionDeny,
			Approver: "bob", Reason: "no " + bidi, CallUID: "u1"}},
		Timeline: [][]string{{"+0s", "", "Executed", "False", "NonZeroExit", "boom " + osc52}},
		Attempts: [][]string{{"1", "cold", "c-1", "", "", "Error" + osc52}},
		Pods:     [][]string{{"c-1-sim", "1", "Failed", "Terminated: " + bidi}},
		Events:   [][]string{{"Warning", "Hostile", "1s", "said " + bidi + osc52}},
		Notes:    []string{"note " + osc52},
	}
	for name, tc := range map[string]struct {
		html string
		want []string
	}{
		"pending": {render(t, "pending", page{Title: "Awaiting approval", User: "carol",
			Pending: &pendingView{Cards: []card{newCard(call, "carol", now)}}}),
			[]string{`s1<span class="esc">\n</span>Requester: admin<span class="esc">\u2066</span>`,
				`$ ls -l /tmp; <span class="esc">\u202e</span>exe.sh<span class="esc">\u202c</span>`,
				`asks <span class="esc">\x1b</span>]52;c;Y3VybCB4fHNo<span class="esc">\x07</span>`}},
		"call": {render(t, "call", page{Title: "ns/c", User: "carol", Call: newCallView(view, "carol", now)}),
			[]string{`s1<span class="esc">\n</span>Requester: admin`,
				`boom <span class="esc">\x1b</span>]52;c;`,
				`no ls -l /tmp; <span class="esc">\u202e</span>exe.sh`,
				`Terminated: ls -l /tmp; <span class="esc">\u202e</span>`,
				`stderr<span class="esc">\u202e</span>`,
				`note <span class="esc">\x1b</span>]52`,
				`said out <span class="esc">\x1b</span>]52;c;eA==<span class="esc">\x07</span> <span class="esc">\u202e</span><span class="esc">\u0085</span>`}},
	} {
		t.Run(name, func(t *testing.T) {
			if hidden := hiddenIn(tc.html); len(hidden) > 0 {
				t.Errorf("raw characters reach the page:\n%s", strings.Join(hidden, "\n"))
			}
			for _, w := range tc.want {
				if !strings.Contains(tc.html, w) {
					t.Errorf("page lacks %q:\n%s", w, tc.html)
				}
			}
		})
	}
}

// The card shows the canonical arguments (the bytes whose digest an answer carries) and
// the digest before anything the agent chose: the presentation over its arguments, the
// tool, the requester, the session.
func TestCardShowsCanonicalArgumentsFirst(t *testing.T) {
	call := hostileCall()
	html := render(t, "pending", page{Title: "Awaiting approval", User: "carol",
		Pending: &pendingView{Cards: []card{newCard(call, "carol", time.Now())}}})
	canonical := `<pre class="arguments canonical">{&#34;command&#34;:&#34;ls -l /tmp; <span class="esc">\u202e</span>exe.sh<span class="esc">\u202c</span>&#34;,` +
		`&#34;z&#34;:&#34;\u001b[8m<span class="esc">\u200b</span>&#34;}</pre>`
	at := strings.Index(html, canonical)
	if at < 0 {
		t.Fatalf("no canonical arguments in the card:\n%s", html)
	}
	digest := strings.Index(html, `Arguments (canonical JSON), digest <code class="digest">`+call.Status.ArgumentsDigest+`</code>`)
	if digest < 0 || digest > at {
		t.Errorf("the digest (at %d) does not come with the arguments (at %d)", digest, at)
	}
	for _, agentWrote := range []string{`class="present"`, "<dt>Tool</dt>", "<dt>Requester</dt>", "<dt>Session</dt>", "<dt>Asked because</dt>"} {
		if i := strings.Index(html, agentWrote); i < at {
			t.Errorf("%s at %d, before the canonical arguments (%d)", agentWrote, i, at)
		}
	}
}
