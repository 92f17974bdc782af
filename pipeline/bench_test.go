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

package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchSchema describes the arguments makeArgs builds.
const benchSchema = `{
  "type": "object",
  "required": ["path", "pattern"],
  "additionalProperties": false,
  "properties": {
    "path": {"type": "string", "maxLength": 4096},
    "pattern": {"type": "string", "minLength": 1},
    "recursive": {"type": "boolean"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100000},
    "include": {"type": "array", "items": {"type": "string"}, "maxItems": 32},
    "context": {"type": "string"},
    "files": {"type": "array", "items": {"type": "object",
      "properties": {"name": {"type": "string"}, "size": {"type": "integer", "minimum": 0}},
      "required": ["name"]}}
  }
}`

// makeArgs builds arguments of about size bytes. The typical shape of a model's tool
// call is a handful of fields, one of them long text (a snippet, a patch, a query); the
// dense shape packs the size with small objects instead (about 45 values per KiB), the
// worst case for schema validation.
func makeArgs(size int, dense bool) []byte {
	var b strings.Builder
	b.WriteString(`{"path": "/workspace/src/controllers", "pattern": "func .*Reconcile\\(", "recursive": true, "limit": 500, "include": ["*.go", "*.yaml", "*.json"]`)
	if !dense {
		b.WriteString(`, "context": "`)
		line := `func (r *ToolCallReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {\n\t`
		for b.Len() < size-len(line)-2 {
			b.WriteString(line)
		}
		b.WriteString(`"}`)
		return []byte(b.String())
	}
	b.WriteString(`, "files": [`)
	for i := 0; b.Len() < size-40; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"name": "pkg/controllers/file_%04d.go", "size": %d}`, i, 1000+i*37)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func benchPolicies(c *Compiler) []*Policy { return c.CompilePolicies(benchPolicySpecs()) }

// benchPolicySpecs are three policies as the reconciler holds them in its registry.
func benchPolicySpecs() []PolicySpec {
	return []PolicySpec{
		{Name: "no-etc", Stage: StagePreExecute, Order: 1, Rules: []Rule{
			{Name: "etc", Expression: `arguments.path.startsWith("/etc")`, Verdict: Deny, Message: "no /etc"},
		}},
		{Name: "limit", Stage: StagePreExecute, Order: 2, Rules: []Rule{
			{Name: "big", Expression: `has(arguments.limit) && arguments.limit > 10000`, Verdict: Ask},
		}},
		{Name: "requester", Stage: StageGuard, Order: 1, Rules: []Rule{
			{Name: "anon", Expression: `call.requester == "" || call.labels.?blocked.orValue("") == "true"`, Verdict: Deny},
		}},
	}
}

func benchCall(b *testing.B, size int, dense bool) {
	c, err := NewCompiler(CompilerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	args := makeArgs(size, dense)
	specs := benchPolicySpecs()
	// The reconciler passes the Tool's raw parameters as they are: no conversion per call.
	schemaDoc := []byte(benchSchema)
	out := Outcome{Started: true, Attempt: 1, Report: &Report{Stdout: []byte(`{"matches": 3, "files": ["a.go", "b.go", "c.go"]}`)}}
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		schema, err := c.CompileSchema(schemaDoc) // cache hit, as in production
		if err != nil {
			b.Fatal(err)
		}
		policies := c.CompilePolicies(specs) // programs are cache hits, as in production
		a := Admit(AdmitInput{
			Arguments: args, Schema: schema, Policies: policies,
			Tool: ToolInfo{Name: "grep", Scope: "dev"},
			Call: CallInfo{Namespace: "team-a", Session: "s1", Requester: "alice"},
		})
		if a.Final.Verdict != Allow {
			b.Fatalf("not admitted: %+v", a.Final)
		}
		r := Normalize(out, NormalizeOptions{})
		if _, err := FreezeResult(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCall1KiB runs one call through freeze, validate, 3 policies (2 PreExecute,
// 1 Guard), normalise and freeze result, with schema and policies compiled once and
// looked up in the Compiler's cache per call, as the reconciler does
// (controllers/toolcall_admit.go calls CompileSchema and CompilePolicies for every call).
func BenchmarkCall1KiB(b *testing.B)       { benchCall(b, 1<<10, false) }
func BenchmarkCall64KiB(b *testing.B)      { benchCall(b, 64<<10, false) }
func BenchmarkCall1KiBDense(b *testing.B)  { benchCall(b, 1<<10, true) }
func BenchmarkCall64KiBDense(b *testing.B) { benchCall(b, 64<<10, true) }

// BenchmarkBaselineUnmarshal1KiB is encoding/json decoding the same dense 1 KiB into
// any: a yardstick for how loaded the machine is when the figures above are taken.
func BenchmarkBaselineUnmarshal1KiB(b *testing.B) {
	args := makeArgs(1<<10, true)
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(args, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve resolves names from the deepest scope of a depth-5 chain over 1,000
// tools; names cycle through every layer (own scope, ancestors, namespace, cluster).
func BenchmarkResolve(b *testing.B) {
	idx, scopes := benchIndex(1000, 5)
	leaf := scopes[len(scopes)-1]
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("tool-%d", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := idx.Resolve(leaf, names[i%len(names)]); err != nil && i%1000 != 13 {
			b.Fatal(err)
		}
		i++
	}
}

// benchIndex builds n tools spread over the cluster layer, the namespace layer and a
// chain of depth scopes.
func benchIndex(n, depth int) (*Index, []string) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var cluster, ns []Registration
	var scopes []Scope
	names := make([]string, depth)
	for d := range depth {
		names[d] = fmt.Sprintf("scope-%d", d)
		s := Scope{Name: names[d], Deny: []string{"tool-13"}}
		if d > 0 {
			s.Parent = names[d-1]
		}
		scopes = append(scopes, s)
	}
	for i := range n {
		r := Registration{Name: fmt.Sprintf("tool-%d", i), Key: fmt.Sprintf("uid-%d", i),
			CreatedAt: t0.Add(time.Duration(i) * time.Second), Ready: true}
		switch i % 3 {
		case 0:
			cluster = append(cluster, r)
		case 1:
			ns = append(ns, r)
		default:
			r.Scope = names[i%depth]
			ns = append(ns, r)
		}
	}
	return NewIndex(cluster, ns, scopes), names
}
