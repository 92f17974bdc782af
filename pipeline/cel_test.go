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
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// mapActivation binds tool and call as plain maps, as the activation did before record.
type mapActivation struct{ *activation }

func (m mapActivation) ResolveName(name string) (any, bool) {
	switch name {
	case varTool:
		return toolMap(m.in.Tool), true
	case varCall:
		return callMap(m.in.Call), true
	}
	return m.activation.ResolveName(name)
}

// TestRecordBehavesAsMap evaluates expressions over tool and call with both bindings and
// expects the same values and the same errors (map iteration order is random in both,
// so iterations are compared as sets).
func TestRecordBehavesAsMap(t *testing.T) {
	c := newTestCompiler(t)
	exprs := []string{
		`call.requester`, `call.namespace + "/" + call.session`, `call.labels`, `call.labels.env`,
		`call.labels.?env.orValue("")`, `call.labels.?missing.orValue("none")`, `call.?labels.?env`,
		`call.?nothing.hasValue()`, `has(call.requester)`, `has(call.nothing)`, `has(call.labels.env)`,
		`call.nothing`, `call["requester"]`, `call["nothing"]`, `dyn(call)[1]`, `dyn(call)[true]`,
		`size(call)`, `call.size()`, `"requester" in call`, `1 in dyn(call)`, `call.all(k, k != "")`,
		`sets.equivalent(call.map(k, k), ["namespace", "session", "requester", "requesterGroups", "labels"])`, `call.exists(k, call[k] == "alice")`, `call == call`, `call != tool`,
		`call == {"namespace": "team-a", "session": "s1", "requester": "alice", "labels": {"env": "prod"}}`,
		`{"namespace": "team-a", "session": "s1", "requester": "alice", "labels": {"env": "prod"}} == call`,
		`call == {"namespace": "team-a"}`, `[call, tool].size()`, `[call][0].requester`, `{"c": call}.c.labels.env`,
		`type(call)`, `type(call) == map`, `string(call.requester)`, `call.requester.startsWith("al")`,
		`tool.name`, `tool.scope`, `tool.annotations`, `tool.annotations.risk`, `tool.annotations.?risk.orValue("")`,
		`tool.annotations.nothing`, `has(tool.annotations.risk)`, `tool == tool`, `size(tool)`, `tool.filter(k, k.size() > 4).size()`,
		`tool.name == "grep" && call.requester == "alice"`, `call.labels == {"env": "prod"}`, `tool.annotations.size()`,
		`{"env": "prod"} == call.labels`, `call.labels != tool.annotations`, `call.labels.all(k, call.labels[k] != "")`,
		`"env" in call.labels`, `call.labels["env"]`, `call.labels["nothing"]`, `dyn(call.labels)[1]`, `size(call.labels)`,
		`type(call.labels)`, `call.labels.?env`, `call.labels.env.size()`, `has(call.labels.nothing)`, `[call.labels][0].env`,
		`call.labels.exists(k, k == "env")`, `call.labels.map(k, call.labels[k]).size()`, `type(tool) == type(call.labels)`,
		`call.requesterGroups`, `"admins" in call.requesterGroups`, `call.requesterGroups.size()`, `size(call.requesterGroups)`,
		`call.requesterGroups.exists(g, g.startsWith("sys"))`, `call.requesterGroups == ["admins", "system:authenticated"]`,
		`call.requesterGroups[0]`, `type(call.requesterGroups) == list`, `has(call.requesterGroups)`,
		`call.requesterGroups.all(g, g in ["admins", "system:authenticated"])`,
		`tool.egress`, `size(tool.egress)`, `tool.egress.exists(e, e.host == "api.example.com" && e.port == 443)`,
		`tool.egress.exists(e, e.host.endsWith(".example.com"))`, `tool.egress[0].port`, `has(tool.egress)`,
		`tool.egress == [{"host": "api.example.com", "port": 443}]`, `"egress" in tool`,
		`tool.credentials`, `size(tool.credentials)`, `tool.credentials.exists(c, c.secret == "github" && c.as == "env")`,
		`tool.credentials[0].key`, `"credentials" in tool`, `tool.credentials.map(c, c.name)`,
		`tool.credentials == [{"name": "TOKEN", "secret": "github", "key": "token", "as": "env"}]`,
	}
	inputs := []Input{
		{Tool: ToolInfo{Name: "grep", Scope: "dev", Annotations: map[string]string{"risk": "low"}, Egress: []HostPort{{"api.example.com", 443}},
			Credentials: []Credential{{Name: "TOKEN", Secret: "github", Key: "token", As: "env"}}},
			Call: CallInfo{Namespace: "team-a", Session: "s1", Requester: "alice", Labels: map[string]string{"env": "prod"},
				RequesterGroups: []string{"admins", "system:authenticated"}}},
		{}, // nil annotations, labels and groups
	}
	for _, in := range inputs {
		for _, expr := range exprs {
			p, err := c.program(envAdmission, expr, cel.DynType)
			if err != nil {
				t.Fatalf("%s: %v", expr, err)
			}
			for _, prg := range []cel.Program{p.tracked, p.plain} {
				if prg == nil {
					continue
				}
				want, _, werr := prg.Eval(mapActivation{newActivation(in)})
				got, _, gerr := prg.Eval(newActivation(in))
				if fmt.Sprint(werr) != fmt.Sprint(gerr) {
					t.Errorf("%s over %+v: error %v, want %v", expr, in, gerr, werr)
					continue
				}
				if werr == nil && (got.Type() != want.Type() || types.Equal(got, want) != types.True) {
					t.Errorf("%s over %+v: %v (%s), want %v (%s)", expr, in, got, got.Type(), want, want.Type())
				}
			}
		}
	}
}
