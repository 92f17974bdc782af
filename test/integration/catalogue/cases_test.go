package catalogue_test

import (
	"strings"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// cases is the adversarial catalogue: add a row to add a case (docs/adversarial.md). Each
// row runs in a namespace of its own; its Tool is named after its id.
var cases = concat(argumentRows, schemaRows, policyRows, outputRows, imageRows, registryRows, identityRows)

const (
	invalid   = metav1.StatusReasonInvalid
	forbidden = metav1.StatusReasonForbidden
	bad       = metav1.StatusReasonBadRequest
	failed    = v1alpha1.PhaseFailed
	denied    = v1alpha1.PhaseDenied
	succeeded = v1alpha1.PhaseSucceeded
	// internalError is the refusal of a request the API server fails on (HTTP 500, no reason).
	internalError = metav1.StatusReason("Code500")
)

var argumentRows = []row{
	{id: "args-over-operator-limit", category: catArguments, hostile: "130 KB of arguments (over --max-argument-bytes, 120 KiB)",
		args: `{"text":"` + strings.Repeat("x", 130_000) + `"}`,
		want: want{phase: failed, reason: v1alpha1.ReasonArgumentsTooLarge, message: `^arguments are 130011 bytes, over the size limit for tool calls$`}},
	{id: "args-over-etcd-limit", category: catArguments, hostile: "1.6 MiB of arguments (over etcd's 1.5 MiB request limit)",
		args: `{"text":"` + strings.Repeat("x", 1600<<10) + `"}`,
		want: want{refused: internalError, message: `etcdserver: request is too large`}},
	{id: "args-over-request-limit", category: catArguments, hostile: "4 MiB request body (over the API server's 3 MB body limit)",
		args: `{"text":"` + strings.Repeat("x", 4<<20) + `"}`,
		want: want{refused: metav1.StatusReasonRequestEntityTooLarge, message: `limit is 3145728`}},
	{id: "args-deep-65", category: catArguments, hostile: "arrays nested 65 deep (one past the freeze depth limit)",
		args: `{"a":` + nested(64) + `}`,
		want: want{phase: failed, reason: v1alpha1.ReasonArgumentsNotObject, message: `nested deeper than 64 levels`}},
	{id: "args-deep-20000", category: catArguments, hostile: "arrays nested 20,000 deep (past the API server's decoder)",
		args: `{"a":` + nested(20000) + `}`,
		want: want{refused: bad, message: `exceeded max depth|max depth`}},
	{id: "args-duplicate-keys", category: catArguments, hostile: `duplicate keys {"a":1,"a":2}: the API server keeps the last; the operator never sees both`,
		args: `{"a":1,"a":2}`,
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"a":2}`}},
	{id: "args-duplicate-keys-strict", category: catArguments, hostile: "duplicate keys sent with fieldValidation=Strict",
		args: `{"a":1,"a":2}`, query: "fieldValidation=Strict",
		want: want{refused: bad, message: `strict decoding error: duplicate field "spec.arguments.a"`}},
	{id: "args-lone-surrogate", category: catArguments, hostile: `a lone UTF-16 surrogate "\ud800": the API server's decoder replaces it with U+FFFD`,
		args: `{"a":"\ud800"}`,
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"a":"\ufffd"}`}},
	{id: "args-invalid-utf8", category: catArguments, hostile: "raw invalid UTF-8 bytes in a string (replaced by U+FFFD on decoding)",
		args: "{\"a\":\"x\xff\xfey\"}",
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"a":"x\ufffd\ufffdy"}`}},
	{id: "args-number-beyond-float64", category: catArguments, hostile: "a number beyond float64 (1e400)",
		args: `{"n":1e400}`,
		want: want{refused: bad, message: `1e400`}},
	{id: "args-integer-beyond-int64", category: catArguments, hostile: "an integer beyond int64 (stored as the nearest float64)",
		args: `{"n":123456789012345678901234567890}`,
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"n":1.2345678901234568e+29}`}},
	{id: "args-negative-zero", category: catArguments, hostile: "-0 and 1.50: number text the canonical form must normalise",
		args: `{"z":-0,"f":1.50}`,
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"f":1.5,"z":0}`}},
	{id: "args-nul-and-controls", category: catArguments, hostile: "NUL and control characters in a string",
		args: `{"a":"\u0000\u0001\u001f\u007f"}`,
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"a":"\u0000\u0001\u001f\u007f"}`}},
	{id: "args-array", category: catArguments, hostile: "arguments that are an array",
		args: `[1,2]`, want: want{refused: invalid, message: `spec.arguments: Invalid value: "array": spec.arguments in body must be of type object`}},
	{id: "args-string", category: catArguments, hostile: "arguments that are a string",
		args: `"rm -rf /"`, want: want{refused: invalid, message: `spec.arguments in body must be of type object: "string"`}},
	{id: "args-null", category: catArguments, hostile: "arguments that are null",
		args: `null`, want: want{refused: invalid, message: `spec.arguments: Required value`}},
	{id: "args-missing", category: catArguments, hostile: "no arguments at all",
		args: "-", want: want{refused: invalid, message: `spec.arguments: Required value`}},
	{id: "args-invalid-json", category: catArguments, hostile: "arguments that are not JSON",
		args: `{"a":`, want: want{refused: bad, message: `unexpected end of JSON input|invalid character`}},
	{id: "args-empty-vs-required", category: catArguments, hostile: "empty arguments for a tool that requires a property",
		tool: textParams,
		want: want{phase: failed, reason: v1alpha1.ReasonSchemaViolation, message: `missing property 'text'`}},
}

var schemaRows = []row{
	{id: "schema-invalid-type", category: catSchemas, hostile: `a parameters schema that is not a schema ("type": 12)`,
		tool: params(map[string]any{"type": 12}),
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotReady, message: `not ready`}},
	{id: "schema-remote-ref", category: catSchemas, hostile: "a $ref to a remote URL (a local server that counts requests: none may come)",
		tool: func(w *tg.ToolWrapper) { w.Parameters(map[string]any{"$ref": remoteRef().URL + "/schema.json"}) },
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotReady, check: func(g Gomega, _ *v1alpha1.ToolCall) {
			g.Expect(remoteRef().hits.Load()).To(BeZero(), "the operator fetched a remote $ref")
		}}},
	{id: "schema-file-ref", category: catSchemas, hostile: "a $ref to file:///etc/passwd",
		tool: params(map[string]any{"$ref": "file:///etc/passwd"}),
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotReady}},
	{id: "schema-catastrophic-regex", category: catSchemas, hostile: "pattern ^(a+)+$ against 100,000 a's and a '!' (exponential for a backtracking engine)",
		tool: params(props(map[string]any{"text": map[string]any{"type": "string", "pattern": "^(a+)+$"}})),
		args: `{"text":"` + strings.Repeat("a", 100_000) + `!"}`,
		want: want{phase: failed, reason: v1alpha1.ReasonSchemaViolation, message: `does not match pattern '\^\(a\+\)\+\$'`}},
	{id: "schema-lookahead-regex", category: catSchemas, hostile: "a pattern RE2 cannot compile (lookahead)",
		tool: params(props(map[string]any{"text": map[string]any{"type": "string", "pattern": "^(?=a)"}})),
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotReady}},
	{id: "schema-recursive-ref", category: catSchemas, hostile: "a recursive $ref (a linked list) and arguments 60 links deep",
		tool: params(map[string]any{"$ref": "#/$defs/node", "$defs": map[string]any{"node": map[string]any{
			"type": "object", "properties": map[string]any{"next": map[string]any{"$ref": "#/$defs/node"}}}}}),
		args: linked(60),
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: linked(60)}},
	{id: "schema-ref-self-loop", category: catSchemas, hostile: `a schema that is only a reference to itself ({"$ref":"#"})`,
		tool: params(map[string]any{"$ref": "#"}),
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotReady, check: registered(metav1.ConditionFalse, v1alpha1.ReasonSchemaInvalid,
			`reference cycle: the schema at # applies itself to the same value`)}},
	{id: "schema-ref-cycle", category: catSchemas, hostile: "two definitions that refer to each other and nothing else",
		tool: params(map[string]any{"$ref": "#/$defs/a", "$defs": map[string]any{
			"a": map[string]any{"$ref": "#/$defs/b"}, "b": map[string]any{"$ref": "#/$defs/a"}}}),
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotReady, check: registered(metav1.ConditionFalse, v1alpha1.ReasonSchemaInvalid,
			`reference cycle: the schema at #/\$defs/[ab] applies itself to the same value`)}},
	{id: "schema-huge-enum", category: catSchemas, hostile: "an enum of 20,000 values, and a value not in it",
		tool: params(props(map[string]any{"text": map[string]any{"enum": bigEnum(20_000)}})),
		args: `{"text":"not-in-the-enum"}`,
		want: want{phase: failed, reason: v1alpha1.ReasonSchemaViolation, message: `^arguments do not match the tool's schema: at /text: value must be one of 'value-00000', .*… \(truncated\)$`,
			check: func(g Gomega, c *v1alpha1.ToolCall) {
				g.Expect(len(c.Status.Result.Error)).To(BeNumerically("<", 1024))
			}}},
	{id: "schema-too-deep", category: catSchemas, hostile: "a schema nested 130 levels deep (past the compiler's 128)",
		tool: params(deepSchema(130)),
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotReady}},
	{id: "schema-output-violation", category: catSchemas, hostile: "a result that violates the tool's output schema",
		tool: func(w *tg.ToolWrapper) { w.Output(map[string]any{"type": "object", "required": []string{"answer"}}) },
		args: `{"text":"no answer here"}`,
		want: want{phase: failed, reason: v1alpha1.ReasonOutputSchemaViolation}},
	{id: "schema-output-invalid", category: catSchemas, hostile: "an output schema that does not compile",
		tool: func(w *tg.ToolWrapper) { w.Output(map[string]any{"type": "nope"}) },
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotReady}},
}

var policyRows = []row{
	{id: "pol-missing-field", category: catPolicies, hostile: "a rule that reads an argument the call does not have",
		objects: policy(v1alpha1.StagePreExecute, `arguments.nosuchfield == 1`, v1alpha1.VerdictAllow),
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError, message: `could not be evaluated|policy`}},
	{id: "pol-division-by-zero", category: catPolicies, hostile: "a rule that divides by zero at run time",
		objects: policy(v1alpha1.StagePreExecute, `1 / (size(arguments) - size(arguments)) == 1`, v1alpha1.VerdictAllow),
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError}},
	{id: "pol-cost-bomb", category: catPolicies, hostile: "three nested comprehensions over a 100-element argument (10^6 steps)",
		objects: policy(v1alpha1.StagePreExecute, `arguments.l.all(a, arguments.l.all(b, arguments.l.all(c, a + b + c >= 0)))`, v1alpha1.VerdictAllow),
		args:    `{"l":[` + strings.TrimSuffix(strings.Repeat("1,", 100), ",") + `]}`,
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError}},
	{id: "pol-list-bomb", category: catPolicies, hostile: "a rule that builds a 10^4-string list from a 100-element argument",
		objects: policy(v1alpha1.StagePreExecute, `size(arguments.l.map(x, arguments.l.map(y, string(x) + string(y)))) > 0`, v1alpha1.VerdictAllow),
		args:    `{"l":[` + strings.TrimSuffix(strings.Repeat("1,", 100), ",") + `]}`,
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError}},
	{id: "pol-non-boolean-static", category: catPolicies, hostile: "a rule whose expression is a string, not a boolean",
		objects: policy(v1alpha1.StagePreExecute, `'yes'`, v1alpha1.VerdictAllow),
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError}},
	{id: "pol-non-boolean-dynamic", category: catPolicies, hostile: "a rule that returns an argument, which is a string at run time",
		objects: policy(v1alpha1.StagePreExecute, `arguments.flag`, v1alpha1.VerdictAllow),
		args:    `{"flag":"yes"}`,
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError}},
	{id: "pol-result-in-pre-execute", category: catPolicies, hostile: "a PreExecute rule that reads result (only PostExecute has it)",
		objects: policy(v1alpha1.StagePreExecute, `result.ok`, v1alpha1.VerdictAllow),
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError}},
	{id: "pol-missing-label", category: catPolicies, hostile: "a rule that reads a call label the call does not carry",
		objects: policy(v1alpha1.StagePreExecute, `call.labels['team'] == 'red'`, v1alpha1.VerdictAllow),
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError}},
	{id: "pol-guard-error", category: catPolicies, hostile: "a Guard rule that fails at run time (guards fail closed too)",
		objects: policy(v1alpha1.StageGuard, `arguments.missing.startsWith('x')`, v1alpha1.VerdictDeny),
		want:    want{phase: denied, reason: v1alpha1.ReasonPolicyError}},
	{id: "pol-post-execute-error", category: catPolicies, hostile: "a PostExecute rule that fails at run time: the result is withheld",
		objects: func(ns string) []client.Object {
			return []client.Object{tg.MakeToolPolicy("post", ns).Stage(v1alpha1.StagePostExecute).
				ActionRule("r", `result.content.nosuch == 1`, v1alpha1.ActionBlock, "").Obj()}
		},
		args: `{"text":"secret"}`,
		want: want{phase: failed, reason: v1alpha1.ReasonPolicyError, message: `withheld`, check: noContent("secret")}},
	{id: "pol-redact-error", category: catPolicies, hostile: "a Redact rule whose replacement fails at run time",
		objects: func(ns string) []client.Object {
			return []client.Object{tg.MakeToolPolicy("post", ns).Stage(v1alpha1.StagePostExecute).
				ActionRule("r", `true`, v1alpha1.ActionRedact, `result.content.nosuch`).Obj()}
		},
		args: `{"text":"secret"}`,
		want: want{phase: failed, reason: v1alpha1.ReasonPolicyError, message: `withheld`, check: noContent("secret")}},
	{id: "pol-message-1024", category: catPolicies, hostile: "a Deny rule with a message of 1024 bytes (the limit), returned whole",
		objects: func(ns string) []client.Object {
			return []client.Object{tg.MakeToolPolicy("deny", ns).Rule(v1alpha1.PolicyRule{Name: "r", Expression: "true",
				Verdict: v1alpha1.VerdictDeny, Message: strings.Repeat("m", 1024)}).Obj()}
		},
		want: want{phase: denied, reason: v1alpha1.ReasonPolicyDenied, check: func(g Gomega, c *v1alpha1.ToolCall) {
			g.Expect(c.Status.Result.Error).To(Equal(strings.Repeat("m", 1024)))
		}}},
	{id: "pol-message-1025", category: catPolicies, hostile: "a rule message over the limit: refused; the call runs unhindered",
		refusedObject: func(ns string) client.Object {
			return tg.MakeToolPolicy("deny", ns).Rule(v1alpha1.PolicyRule{Name: "r", Expression: "true",
				Verdict: v1alpha1.VerdictDeny, Message: strings.Repeat("m", 1025)}).Obj()
		},
		want: want{objectRefused: invalid, objectMessage: `spec.rules\[0\].message: Too long: may not be more than 1024`,
			phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
	{id: "pol-expression-4097", category: catPolicies, hostile: "a rule expression over 4096 bytes: refused",
		refusedObject: func(ns string) client.Object {
			return tg.MakeToolPolicy("long", ns).VerdictRule("r", "true"+strings.Repeat(" ", 4093), v1alpha1.VerdictDeny).Obj()
		},
		want: want{objectRefused: invalid, objectMessage: `spec.rules\[0\].expression: Too long`,
			phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
	{id: "pol-65-rules", category: catPolicies, hostile: "a policy of 65 rules (one past the limit): refused",
		refusedObject: func(ns string) client.Object {
			w := tg.MakeToolPolicy("many", ns)
			for i := range 65 {
				w.VerdictRule("r"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+itoa(i), "true", v1alpha1.VerdictDeny)
			}
			return w.Obj()
		},
		want: want{objectRefused: invalid, objectMessage: `spec.rules: Too many: 65: must have at most 64 items`,
			phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
}

var outputRows = []row{
	{id: "out-bomb-signed", category: catOutputs, hostile: "a signed frame whose stdout inflates to 16 MiB (a runner ignoring the limit)",
		script: tg.Outcome{Bomb: true}, want: want{phase: failed, reason: v1alpha1.ReasonResultUnreadable}},
	{id: "out-bomb-forged", category: catOutputs, hostile: "an unsigned pointer to a gzip bomb in the log",
		script: tg.Outcome{Bomb: true, Forge: true}, want: want{phase: failed, reason: v1alpha1.ReasonResultUnreadable}},
	{id: "out-stdout-8mib", category: catOutputs, hostile: "8 MiB of stdout (over the 1 MiB maxOutputBytes)",
		script: tg.Outcome{Stdout: []byte(strings.Repeat("x", 8<<20))},
		want: want{phase: failed, reason: v1alpha1.ReasonOutputTooLarge, check: func(g Gomega, c *v1alpha1.ToolCall) {
			g.Expect(c.Status.Result.Meta).To(HaveKeyWithValue("truncated", "true"))
		}}},
	{id: "out-invalid-utf8", category: catOutputs, hostile: "stdout that is not UTF-8",
		script: tg.Outcome{Stdout: []byte{'o', 'k', 0xff, 0xfe, 0xfd}}, want: want{phase: failed, reason: v1alpha1.ReasonOutputNotUTF8}},
	{id: "out-nul-bytes", category: catOutputs, hostile: "NUL bytes in plain-text stdout",
		script: tg.Outcome{Stdout: []byte("a\x00b\x00")},
		want:   want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `"a\u0000b\u0000"`}},
	{id: "out-nul-in-json", category: catOutputs, hostile: "a JSON object whose string holds a NUL",
		script: tg.Outcome{Stdout: []byte(`{"k":"\u0000"}`)},
		want:   want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"k":"\u0000"}`}},
	{id: "out-forged-frame", category: catOutputs, hostile: "the body wrote its own frame claiming success and killed the runner",
		script: tg.Outcome{Forge: true, Stdout: []byte(`{"forged":true}`)},
		want:   want{phase: failed, reason: v1alpha1.ReasonResultUnreadable, check: noContent("forged")}},
	{id: "out-iserror-body", category: catOutputs, hostile: `a body printing {"isError":true}`,
		script: tg.Outcome{Stdout: []byte(`{"isError":true}`)}, want: want{phase: failed, reason: v1alpha1.ReasonToolError}},
	{id: "out-iserror-not-bool", category: catOutputs, hostile: `a body printing {"isError":"yes"} (not a boolean)`,
		script: tg.Outcome{Stdout: []byte(`{"isError":"yes"}`)},
		want:   want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"isError":"yes"}`}},
	{id: "out-then-sigkill", category: catOutputs, hostile: "output, then the body killed by SIGKILL (the runner reports it)",
		script: tg.Outcome{Stdout: []byte("partial"), ExitCode: 137, Signal: "SIGKILL"},
		want:   want{phase: failed, reason: v1alpha1.ReasonNonZeroExit, message: `SIGKILL`}},
	{id: "out-then-killed-no-frame", category: catOutputs, hostile: "output, then the container killed before the runner wrote a frame",
		script: tg.Outcome{Stdout: []byte("partial"), ExitCode: 137, NoFrame: true},
		want: want{phase: failed, reason: v1alpha1.ReasonExecutionLost, check: func(g Gomega, c *v1alpha1.ToolCall) {
			g.Expect(c.Status.Result.Meta).To(HaveKeyWithValue("containerExitCode", "137"))
			g.Expect(c.Status.Result.Meta).NotTo(HaveKey("exitCode"))
		}}},
	{id: "out-exit-255", category: catOutputs, hostile: "exit code 255",
		script: tg.Outcome{ExitCode: 255}, want: want{phase: failed, reason: v1alpha1.ReasonNonZeroExit, check: metaExit("255")}},
	{id: "out-exit-negative", category: catOutputs, hostile: "exit code -1 (out of range for a process)",
		script: tg.Outcome{ExitCode: -1}, want: want{phase: failed, reason: v1alpha1.ReasonNonZeroExit, check: metaExit("-1")}},
	{id: "out-exit-int32-max", category: catOutputs, hostile: "exit code 2147483647",
		script: tg.Outcome{ExitCode: 2147483647}, want: want{phase: failed, reason: v1alpha1.ReasonNonZeroExit, check: metaExit("2147483647")}},
	{id: "out-exit0-with-signal", category: catOutputs, hostile: "a frame saying exit 0 yet killed by SIGKILL",
		script: tg.Outcome{Stdout: []byte("x"), Signal: "SIGKILL"},
		want:   want{phase: failed, reason: v1alpha1.ReasonNonZeroExit, message: `SIGKILL`}},
	{id: "out-json-beyond-float64", category: catOutputs, hostile: `stdout {"n":1e400}: JSON the API server cannot store`,
		script: tg.Outcome{Stdout: []byte(`{"n":1e400}`)},
		want:   want{phase: failed, reason: v1alpha1.ReasonOperatorError, message: `^the call's result could not be represented as JSON$`}},
	{id: "out-json-deep", category: catOutputs, hostile: "stdout that is JSON nested 20,000 deep: kept as the text it is",
		script: tg.Outcome{Stdout: []byte(nested(20000))},
		want:   want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: jsonString(nested(20000))}},
	{id: "out-json-numbers", category: catOutputs, hostile: "JSON numbers the API server re-encodes (1.0, 1E+2, an integer beyond int64)",
		script: tg.Outcome{Stdout: []byte(`{"one":1.0,"exp":1E+2,"big":123456789012345678901234567890}`)},
		want:   want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"one":1,"exp":100,"big":1.2345678901234568e+29}`}},
	{id: "out-json-numbers-edges", category: catOutputs, hostile: "JSON numbers at the API server's edges (-0.0, 1e-7, 1e21, 2^63)",
		script: tg.Outcome{Stdout: []byte(`{"negzero":-0.0,"tiny":1e-7,"huge":1e21,"over":9223372036854775808,"under":1e-400}`)},
		want:   want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `{"negzero":0,"tiny":1e-7,"huge":1e21,"over":9223372036854776000,"under":0}`}},
	{id: "out-json-duplicate-keys", category: catOutputs, hostile: `stdout {"a":1,"a":2}`,
		script: tg.Outcome{Stdout: []byte(`{"a":1,"a":2}`)},
		want:   want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, content: `"{\"a\":1,\"a\":2}"`}},
	{id: "out-huge-stderr", category: catOutputs, hostile: "exit 1 with 200 KB of stderr: the message is bounded",
		script: tg.Outcome{ExitCode: 1, Stderr: strings.Repeat("e", 200_000)},
		want: want{phase: failed, reason: v1alpha1.ReasonNonZeroExit, check: func(g Gomega, c *v1alpha1.ToolCall) {
			g.Expect(len(c.Status.Result.Error)).To(BeNumerically("<=", 32768))
		}}},
	{id: "out-empty", category: catOutputs, hostile: "no output at all",
		script: tg.Outcome{Stdout: []byte{}, Stderr: ""},
		want:   want{phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
}

var imageRows = []row{
	{id: "img-never-pulled", category: catImages, hostile: "an image that is not there (ErrImageNeverPull): ends at once",
		script: tg.Outcome{Waiting: "ErrImageNeverPull"}, want: want{phase: failed, reason: v1alpha1.ReasonImageNeverStarted}},
	{id: "img-invalid-name", category: catImages, hostile: "an image name the runtime cannot parse (InvalidImageName): ends at once",
		script: tg.Outcome{Waiting: "InvalidImageName"}, want: want{phase: failed, reason: v1alpha1.ReasonImageNeverStarted}},
	{id: "img-pull-error", category: catImages, hostile: "a missing image (ErrImagePull): ends at the deadline",
		script: tg.Outcome{Waiting: "ErrImagePull"}, tool: timeout(time.Minute), advance: 2 * time.Minute,
		want: want{phase: failed, reason: v1alpha1.ReasonImageNeverStarted}},
	{id: "img-private", category: catImages, hostile: "a private image (ImagePullBackOff): ends at the deadline",
		script: tg.Outcome{Waiting: "ImagePullBackOff"}, tool: timeout(time.Minute), advance: 2 * time.Minute,
		want: want{phase: failed, reason: v1alpha1.ReasonImageNeverStarted}},
	{id: "img-wrong-arch-create", category: catImages, hostile: "a binary for another architecture (CreateContainerError): ends at the deadline",
		script: tg.Outcome{Waiting: "CreateContainerError"}, tool: timeout(time.Minute), advance: 2 * time.Minute,
		want: want{phase: failed, reason: v1alpha1.ReasonImageNeverStarted}},
	{id: "img-wrong-arch-start", category: catImages, hostile: "the runtime cannot start the entrypoint (not executable: StartError, exit 128, no frame)",
		script: tg.Outcome{Reason: "StartError", ExitCode: 128, NoFrame: true},
		want:   want{phase: failed, reason: v1alpha1.ReasonImageNeverStarted}},
	{id: "img-retried", category: catImages, hostile: "a missing image with a retry policy: three attempts, each ImageNeverStarted, then it ends",
		script: tg.Outcome{Waiting: "ErrImageNeverPull"}, tool: func(w *tg.ToolWrapper) { w.Retry(3, v1alpha1.ReasonImageNeverStarted) },
		want: want{phase: failed, reason: v1alpha1.ReasonImageNeverStarted, check: func(g Gomega, c *v1alpha1.ToolCall) {
			g.Expect(c.Status.Attempts).To(HaveLen(3))
		}}},
	{id: "img-name-too-long", category: catImages, hostile: "an image name of 513 characters: the Tool is refused; its call finds no tool",
		noTool: true,
		refusedObject: func(ns string) client.Object {
			return tg.MakeTool("img-name-too-long", ns).Image(strings.Repeat("i", 513)).Obj()
		},
		want: want{objectRefused: invalid, objectMessage: `spec.body.image: Too long`, phase: failed, reason: v1alpha1.ReasonToolNotFound}},
}

var registryRows = []row{
	{id: "reg-scope-cycle", category: catRegistry, hostile: "a call in a scope whose parents loop (a -> b -> a)",
		objects: scopes([2]string{"a", "b"}, [2]string{"b", "a"}), scope: "a",
		want: want{phase: failed, reason: v1alpha1.ReasonScopeCycle}},
	{id: "reg-unknown-parent", category: catRegistry, hostile: "a call in a scope whose parent does not exist",
		objects: scopes([2]string{"orphan", "gone"}), scope: "orphan",
		want: want{phase: failed, reason: v1alpha1.ReasonUnknownParent}},
	{id: "reg-unknown-scope", category: catRegistry, hostile: "a call in a scope that does not exist",
		scope: "nowhere", want: want{phase: failed, reason: v1alpha1.ReasonUnknownScope}},
	{id: "reg-self-parent", category: catRegistry, hostile: "a scope that names itself as its parent: refused",
		refusedObject: func(ns string) client.Object { return tg.MakeToolScope("me", ns).Parent("me").Obj() },
		want: want{objectRefused: invalid, objectMessage: `spec.parent must not name the scope itself`,
			phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
	{id: "reg-2000-tools", category: catRegistry, hostile: "2,000 Tools in the namespace: the call still resolves",
		objects: manyTools(2000),
		want:    want{phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
	{id: "reg-names-at-limits", category: catRegistry, hostile: "a 253-character call name and a 253-character Tool object name",
		noTool: true, callName: strings.Repeat("c", 253),
		objects: func(ns string) []client.Object {
			return []client.Object{tg.MakeTool(strings.Repeat("t", 253), ns).Name("reg-names-at-limits").Image("example/x:1").Command("/x").Obj()}
		},
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
	{id: "reg-call-name-254", category: catRegistry, hostile: "a 254-character call name: refused",
		callName: strings.Repeat("c", 254), want: want{refused: invalid, message: `metadata.name: Invalid value: .*must be no more than 253 characters`}},
	{id: "reg-scope-63-tool-64", category: catRegistry, hostile: "a 63-character scope holding a 64-character tool name",
		noTool: true, scope: strings.Repeat("s", 63), callTool: strings.Repeat("T", 64),
		objects: func(ns string) []client.Object {
			return []client.Object{tg.MakeToolScope(strings.Repeat("s", 63), ns).Obj(),
				tg.MakeTool("long", ns).Name(strings.Repeat("T", 64)).Scope(strings.Repeat("s", 63)).Image("example/x:1").Command("/x").Obj()}
		},
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
	{id: "reg-scope-64", category: catRegistry, hostile: "a call naming a 64-character scope: refused",
		scope: strings.Repeat("s", 64), want: want{refused: invalid, message: `spec.scope: Too long`}},
	{id: "reg-tool-65", category: catRegistry, hostile: "a call naming a 65-character tool: refused",
		callTool: strings.Repeat("T", 65), want: want{refused: invalid, message: `spec.tool: Too long`}},
	{id: "reg-tool-name-shell", category: catRegistry, hostile: "a tool name with spaces and shell characters: refused",
		callTool: "rm -rf /; echo", want: want{refused: invalid, message: `spec.tool: Invalid value: .*should match`}},
	{id: "reg-tool-name-unicode", category: catRegistry, hostile: "a tool name with non-ASCII letters: refused",
		callTool: "tööl", want: want{refused: invalid, message: `spec.tool: Invalid value: .*should match`}},
	{id: "reg-tool-name-punct", category: catRegistry, hostile: "a tool name of only '_' and '-' (valid, not a label value)",
		noTool: true, callTool: "_-_",
		objects: func(ns string) []client.Object {
			return []client.Object{tg.MakeTool("punct", ns).Name("_-_").Image("example/x:1").Command("/x").Obj()}
		},
		want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded}},
	{id: "reg-tool-spec-name-dot", category: catRegistry, hostile: "a Tool whose spec.name has a '.': refused; its call finds no tool",
		noTool: true, callTool: "a_b",
		refusedObject: func(ns string) client.Object {
			return tg.MakeTool("dotted", ns).Name("a.b").Image("example/x:1").Obj()
		},
		want: want{objectRefused: invalid, objectMessage: `spec.name: Invalid value: "a.b"`, phase: failed, reason: v1alpha1.ReasonToolNotFound}},
	{id: "reg-tool-in-unknown-scope", category: catRegistry, hostile: "the only Tool of that name is registered in a scope that does not exist",
		tool: func(w *tg.ToolWrapper) { w.Scope("ghost") },
		want: want{phase: failed, reason: v1alpha1.ReasonToolNotFound}},
	{id: "reg-denied-by-scope", category: catRegistry, hostile: "a call of a tool its scope denies",
		objects: func(ns string) []client.Object {
			return []client.Object{tg.MakeToolScope("strict", ns).Deny("reg-denied-by-scope").Obj()}
		},
		scope: "strict", want: want{phase: failed, reason: v1alpha1.ReasonToolRestricted, message: `^tool "reg-denied-by-scope" is not permitted in scope "strict"$`}},
}

var identityRows = []row{
	{id: "id-wrong-requester", category: catIdentity, hostile: "a call whose requester is another user: the API server stamps the real one",
		requester: "bob", want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, check: requesterIs(tg.AdminUser)}},
	{id: "id-empty-requester", category: catIdentity, hostile: "a call with a blank requester: the API server stamps the real one",
		requester: " ", want: want{phase: succeeded, reason: v1alpha1.ReasonSucceeded, check: requesterIs(tg.AdminUser)}},
	{id: "id-self-approval", category: catIdentity, hostile: "the requester approves its own call: ignored; the call times out",
		user: "agent", objects: askPolicy, approval: &approval{user: "agent", editor: true}, advance: 16 * time.Minute,
		want: want{consumed: v1alpha1.ReasonSelfApproval, phase: denied, reason: v1alpha1.ReasonApprovalTimeout}},
	{id: "id-other-call-uid", category: catIdentity, hostile: "an approval for another call (wrong callUID): ignored",
		user: "agent", objects: askPolicy, approval: &approval{user: "carol", callUID: "0b9e0f6a-0000-4000-8000-000000000002"},
		advance: 16 * time.Minute,
		want:    want{consumed: v1alpha1.ReasonApprovalCallMismatch, phase: denied, reason: v1alpha1.ReasonApprovalTimeout}},
	{id: "id-other-digest", category: catIdentity, hostile: "an approval whose digest is of other arguments: the call is denied",
		user: "agent", objects: askPolicy, approval: &approval{user: "carol", digest: tg.Digest([]byte(`{"text":"other"}`))},
		want: want{consumed: v1alpha1.ReasonDigestMismatch, phase: denied, reason: v1alpha1.ReasonApprovalDigestMismatch}},
	{id: "id-no-approver-role", category: catIdentity, hostile: "an approval from a user with the agent role only: refused by RBAC",
		user: "agent", objects: askPolicy, approval: &approval{user: "mallory", role: tg.AgentRole}, advance: 16 * time.Minute,
		want: want{approvalRefused: forbidden, approvalMessage: `User "mallory" cannot create resource "toolcallapprovals"`,
			phase: denied, reason: v1alpha1.ReasonApprovalTimeout}},
	{id: "id-approver-spoofed", category: catIdentity, hostile: "an approval naming the requester as its approver: stamped as its real author, it applies",
		user: "agent", objects: askPolicy, approval: &approval{user: "carol", approver: "agent"},
		want: want{consumed: v1alpha1.ReasonApplied, phase: succeeded, reason: v1alpha1.ReasonSucceeded,
			check: func(g Gomega, call *v1alpha1.ToolCall) { g.Expect(call.Status.Approver).To(Equal("carol")) }}},
	{id: "id-owner-other-call", category: catIdentity, hostile: "an approval whose ownerReference names another call: refused",
		user: "agent", objects: askPolicy, approval: &approval{user: "carol", ownerName: "someone-else"}, advance: 16 * time.Minute,
		want: want{approvalRefused: invalid, approvalMessage: `an ownerReference to a ToolCall must name the call this approval answers`,
			phase: denied, reason: v1alpha1.ReasonApprovalTimeout}},
	{id: "id-malformed-digest", category: catIdentity, hostile: "an approval whose digest is not a sha256 digest: refused",
		user: "agent", objects: askPolicy, approval: &approval{user: "carol", digest: "sha256:not-hex"}, advance: 16 * time.Minute,
		want: want{approvalRefused: invalid, approvalMessage: `spec.argumentsDigest: Invalid value`,
			phase: denied, reason: v1alpha1.ReasonApprovalTimeout}},
	{id: "id-replayed-approval", category: catIdentity, hostile: "an approval replayed for the call deleted and created again under its name",
		user: "agent", objects: askPolicy, approval: &approval{user: "carol", replay: true}, advance: 16 * time.Minute,
		want: want{consumed: v1alpha1.ReasonApprovalCallMismatch, phase: denied, reason: v1alpha1.ReasonApprovalTimeout}},
	{id: "id-not-a-subject", category: catIdentity, hostile: "a requester who is not among the subjects of the call's scope",
		user: "agent", scope: "restricted",
		objects: func(ns string) []client.Object {
			return []client.Object{tg.MakeToolScope("restricted", ns).Subjects("someone-else").Obj()}
		},
		want: want{phase: denied, reason: v1alpha1.ReasonNotASubject}},
}

// requesterIs checks the requester the API server stamped on the call.
func requesterIs(user string) func(Gomega, *v1alpha1.ToolCall) {
	return func(g Gomega, call *v1alpha1.ToolCall) { g.Expect(call.Spec.Requester).To(Equal(user)) }
}
