package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

func finished(phase v1alpha1.ToolCallPhase, r *v1alpha1.ToolResult) *v1alpha1.ToolCall {
	call := &v1alpha1.ToolCall{}
	call.Name, call.Namespace = "grep-x1", "agents"
	call.Spec.Tool = "grep"
	call.Status.Phase, call.Status.Result = phase, r
	return call
}

func content(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func callMetaWant(phase, reason string) map[string]any {
	return map[string]any{MetaCall: "grep-x1", MetaNamespace: "agents", MetaPhase: phase, MetaReason: reason}
}

func textItem(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }

// shFailure is what the sh tool leaves when its command exits 1.
const shFailure = `{"isError":true,"error":"the command exited with code 1: boom","exitCode":1,` +
	`"stdout":"ran 3 tests\nFAIL: TestX\n","stderr":"boom"}`

const shFailureText = "the command exited with code 1: boom\n\n" +
	"exitCode: 1\n" +
	"stdout (24 bytes):\nran 3 tests\nFAIL: TestX\n" +
	"stderr: boom"

var shFailureObject = map[string]any{"isError": true, "error": "the command exited with code 1: boom",
	"exitCode": 1.0, "stdout": "ran 3 tests\nFAIL: TestX\n", "stderr": "boom"}

func TestResultFor(t *testing.T) {
	withOutput := &mcp.Tool{Name: "grep", OutputSchema: map[string]any{"type": "object", "required": []any{"matches"}}}
	shError := &v1alpha1.ToolResult{IsError: true, Reason: "ToolError", Error: "the command exited with code 1: boom", Content: content(shFailure)}
	cases := []struct {
		name string
		call *v1alpha1.ToolCall
		tool *mcp.Tool
		want map[string]any
	}{{
		name: "object content: compact text and structuredContent",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true, Reason: "Succeeded", Content: content(`{ "matches": 3 }`)}),
		tool: withOutput,
		want: map[string]any{
			"content": textItem(`{"matches":3}`), "structuredContent": map[string]any{"matches": 3.0},
			"_meta": callMetaWant("Succeeded", "Succeeded"),
		},
	}, {
		name: "string content is the text itself; no structuredContent; the result's meta",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true, Reason: "Succeeded", Content: content(`"hello\nworld"`), Meta: map[string]string{"outputBytes": "11"}}),
		want: map[string]any{
			"content": textItem("hello\nworld"),
			"_meta":   mergeMeta(callMetaWant("Succeeded", "Succeeded"), MetaResult, map[string]any{"outputBytes": "11"}),
		},
	}, {
		name: "a success's control characters are escaped in the text, kept in structuredContent",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true, Reason: "Succeeded", Content: content("{\"name\":\"ls \u202eetadpu\x7f\"}")}), // raw, as the API server sends it
		want: map[string]any{
			"content": textItem(`{"name":"ls \u202eetadpu\u007f"}`), "structuredContent": map[string]any{"name": "ls \u202eetadpu\x7f"},
			"_meta": callMetaWant("Succeeded", "Succeeded"),
		},
	}, {
		name: "array content: compact JSON text, no structuredContent",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true, Reason: "Succeeded", Content: content(`[1, 2]`)}),
		want: map[string]any{"content": textItem(`[1,2]`), "_meta": callMetaWant("Succeeded", "Succeeded")},
	}, {
		name: "no content: an empty text item",
		call: finished(v1alpha1.PhaseSucceeded, &v1alpha1.ToolResult{OK: true, Reason: "Succeeded"}),
		want: map[string]any{"content": textItem(""), "_meta": callMetaWant("Succeeded", "Succeeded")},
	}, {
		name: "a failing command: message, exit code, stdout, stderr in the text; the object as structuredContent",
		call: finished(v1alpha1.PhaseFailed, shError),
		want: map[string]any{
			"content": textItem(shFailureText), "structuredContent": shFailureObject, "isError": true,
			"_meta": callMetaWant("Failed", "ToolError"),
		},
	}, {
		name: "the same failure of a tool with an output schema: the text only, as clients validate structuredContent",
		call: finished(v1alpha1.PhaseFailed, shError),
		tool: withOutput,
		want: map[string]any{"content": textItem(shFailureText), "isError": true, "_meta": callMetaWant("Failed", "ToolError")},
	}, {
		name: "an error object's other fields follow, sorted; the message's own field is left out",
		call: finished(v1alpha1.PhaseFailed, &v1alpha1.ToolResult{IsError: true, Reason: "ToolError", Error: "not found",
			Content: content(`{"isError":true,"error":"not found","tries":3,"path":"/x"}`)}),
		want: map[string]any{
			"content":           textItem("not found\n\npath: /x\ntries: 3"),
			"structuredContent": map[string]any{"isError": true, "error": "not found", "tries": 3.0, "path": "/x"},
			"isError":           true, "_meta": callMetaWant("Failed", "ToolError"),
		},
	}, {
		name: "non-object content that says more than the message follows it (a non-zero exit's stdout)",
		call: finished(v1alpha1.PhaseFailed, &v1alpha1.ToolResult{IsError: true, Reason: "NonZeroExit", Error: "the tool exited with code 2: oops",
			Content: content(`"partial\noutput"`), Meta: map[string]string{"exitCode": "2"}}),
		want: map[string]any{
			"content": textItem("the tool exited with code 2: oops\n\npartial\noutput"), "isError": true,
			"_meta": mergeMeta(callMetaWant("Failed", "NonZeroExit"), MetaResult, map[string]any{"exitCode": "2"}),
		},
	}, {
		name: "array content of an error follows the message as compact JSON",
		call: finished(v1alpha1.PhaseFailed, &v1alpha1.ToolResult{IsError: true, Reason: "ToolError", Error: "bad", Content: content(`[1, "a"]`)}),
		want: map[string]any{"content": textItem("bad\n\n[1,\"a\"]"), "isError": true, "_meta": callMetaWant("Failed", "ToolError")},
	}, {
		name: "content that repeats the message is said once",
		call: finished(v1alpha1.PhaseFailed, &v1alpha1.ToolResult{IsError: true, Reason: "OOMKilled", Error: "out of memory", Content: content(`"out of memory"`)}),
		want: map[string]any{"content": textItem("out of memory"), "isError": true, "_meta": callMetaWant("Failed", "OOMKilled")},
	}, {
		name: "denied is an error even if the result says otherwise",
		call: finished(v1alpha1.PhaseDenied, &v1alpha1.ToolResult{Reason: "PolicyDenied", Content: content(`"no prod"`)}),
		want: map[string]any{"content": textItem("no prod"), "isError": true, "_meta": callMetaWant("Denied", "PolicyDenied")},
	}, {
		name: "an error without message or content says so",
		call: finished(v1alpha1.PhaseFailed, &v1alpha1.ToolResult{IsError: true, Reason: "Weird"}),
		want: map[string]any{
			"content": textItem(`the call grep-x1 ended in phase Failed without a message (reason "Weird")`),
			"isError": true, "_meta": callMetaWant("Failed", "Weird"),
		},
	}, {
		name: "no result at all: an error whose reason is the phase",
		call: finished(v1alpha1.PhaseFailed, nil),
		want: map[string]any{
			"content": textItem(`the call grep-x1 ended in phase Failed without a message (reason "")`),
			"isError": true, "_meta": callMetaWant("Failed", "Failed"),
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, wire(t, ResultFor(tc.call, tc.tool))); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func mergeMeta(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

// The gateway's own answers: those with a call name it with its phase; refusals made no
// call. Each has a reason no call result has.
func TestGatewayAnswers(t *testing.T) {
	parked := finished(v1alpha1.PhaseAwaitingApproval, nil)
	running := finished("", nil) // created, the operator has not written a phase yet
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "toolgate.dev", Kind: "ToolCall"}, "grep-",
		field.ErrorList{field.Invalid(field.NewPath("spec", "session"), "a\x1b[2Jb", "too long")})
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "toolgate.dev", Resource: "toolcalls"}, "", errors.New("exceeded quota"))
	cases := []struct {
		name      string
		res       *mcp.CallToolResult
		wantMeta  map[string]any
		wantTexts []string
	}{
		{"awaiting approval", AwaitingApprovalResult(parked), callMetaWant("AwaitingApproval", ReasonAwaitingApproval),
			[]string{"awaits human approval", "grep-x1", "toolgate approve grep-x1 -n agents"}},
		{"still running", StillRunningResult(running, 0), callMetaWant("Pending", ReasonStillRunning),
			[]string{"still running", "grep-x1", "not cancelled"}},
		{"deleted", deletedResult(running), callMetaWant("Pending", ReasonCallDeleted), []string{"grep-x1 was deleted"}},
		{"in-flight limit", refused(logr.Discard(), ReasonInFlightLimit, "alice has 16 calls in flight"),
			map[string]any{MetaPhase: PhaseRefused, MetaReason: ReasonInFlightLimit}, []string{"16 calls in flight"}},
		{"invalid create: the API server's message, its control characters escaped", mustRefusal(t, invalid),
			map[string]any{MetaPhase: PhaseRefused, MetaReason: ReasonCreateInvalid}, []string{"the call was rejected", `a\x1b[2Jb`}},
		{"forbidden create", mustRefusal(t, forbidden),
			map[string]any{MetaPhase: PhaseRefused, MetaReason: ReasonCreateForbidden}, []string{"the call was refused", "exceeded quota"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := wire(t, tc.res)
			if got["isError"] != true {
				t.Error("isError = false, want true")
			}
			if diff := cmp.Diff(tc.wantMeta, got["_meta"]); diff != "" {
				t.Errorf("_meta (-want +got):\n%s", diff)
			}
			text := tc.res.Content[0].(*mcp.TextContent).Text
			for _, w := range tc.wantTexts {
				if !strings.Contains(text, w) {
					t.Errorf("text %q lacks %q", text, w)
				}
			}
			if strings.ContainsRune(text, '\x1b') {
				t.Errorf("text %q holds a raw ESC", text)
			}
		})
	}
}

func mustRefusal(t *testing.T, err error) *mcp.CallToolResult {
	t.Helper()
	res, rpcErr := createFailed(logr.Discard(), err)
	if rpcErr != nil || res == nil {
		t.Fatalf("createFailed(%v) = %v, %v; want a refusal", err, res, rpcErr)
	}
	return res
}

// Anything else the API server says on create (it is away) is a protocol error.
func TestCreateFailedOtherwiseIsAProtocolError(t *testing.T) {
	res, err := createFailed(logr.Discard(), apierrors.NewServiceUnavailable("etcd is away"))
	if res != nil || err == nil || !strings.Contains(err.Error(), "etcd is away") {
		t.Fatalf("createFailed = %v, %v; want no result and the error", res, err)
	}
}
