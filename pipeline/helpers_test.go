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
	mathrand "math/rand"
	"testing"
)

func newTestCompiler(t testing.TB) *Compiler {
	t.Helper()
	c, err := NewCompiler(CompilerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustFreeze(t testing.TB, s string) *Frozen {
	t.Helper()
	f, err := Freeze([]byte(s), FreezeOptions{})
	if err != nil {
		t.Fatalf("Freeze(%s): %v", s, err)
	}
	return f
}

func mustSchema(t testing.TB, c *Compiler, s string) *Schema {
	t.Helper()
	sch, err := c.CompileSchema([]byte(s))
	if err != nil {
		t.Fatalf("CompileSchema(%s): %v", s, err)
	}
	return sch
}

// newQuickRand gives testing/quick a fixed seed, so failures reproduce.
func newQuickRand() *mathrand.Rand { return mathrand.New(mathrand.NewSource(7)) }
