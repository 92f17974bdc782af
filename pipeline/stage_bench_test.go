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

import "testing"

// Per-stage breakdown of BenchmarkCall1KiB.

func BenchmarkStageFreeze(b *testing.B) {
	args := makeArgs(1<<10, false)
	for b.Loop() {
		if _, err := Freeze(args, FreezeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStageValidate(b *testing.B) {
	c, _ := NewCompiler(CompilerOptions{})
	s, _ := c.CompileSchema([]byte(benchSchema))
	f, _ := Freeze(makeArgs(1<<10, false), FreezeOptions{})
	b.ReportAllocs()
	for b.Loop() {
		Validate(s, f)
	}
}

func BenchmarkStagePolicies(b *testing.B) {
	c, _ := NewCompiler(CompilerOptions{})
	ps := benchPolicies(c)
	f, _ := Freeze(makeArgs(1<<10, false), FreezeOptions{})
	in := Input{Tool: ToolInfo{Name: "grep"}, Call: CallInfo{Requester: "alice"}, Arguments: f}
	b.ReportAllocs()
	for b.Loop() {
		act := newActivation(in)
		d := preExecute(ps, act)
		guard(d, ps, act, nil)
	}
}
