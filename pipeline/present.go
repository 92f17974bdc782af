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
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// MaxPresentBytes bounds a rendered presentation string; longer text is cut at a rune
// boundary and ends with "…".
const MaxPresentBytes = 4 << 10

// CheckPresentation compiles a Tool's present-call and present-result expressions
// (empty ones are skipped) so the Tool controller can report PresentationInvalid at
// registration; the programs stay cached for rendering.
func (c *Compiler) CheckPresentation(callExpr, resultExpr string) error {
	if callExpr != "" {
		if _, err := c.program(envAdmission, callExpr, cel.StringType); err != nil {
			return fmt.Errorf("present call: %w", err)
		}
	}
	if resultExpr != "" {
		if _, err := c.program(envResults, resultExpr, cel.StringType); err != nil {
			return fmt.Errorf("present result: %w", err)
		}
	}
	return nil
}

// PresentCall renders a Tool's present-call expression (a CEL string expression over
// tool, arguments and call) for UIs. On any error (compile, evaluation, cost, non-string
// value) it returns "" and the error; presentation never fails a call.
func (c *Compiler) PresentCall(expr string, in Input) (string, error) {
	return c.present(envAdmission, expr, newActivation(in))
}

// PresentResult renders a Tool's present-result expression, which also sees result
// {content, isError}. Errors as for PresentCall.
func (c *Compiler) PresentResult(expr string, in Input, r Result) (string, error) {
	return c.present(envResults, expr, newActivation(in).withResult(r))
}

func (c *Compiler) present(env envKind, expr string, act *activation) (string, error) {
	prg, err := c.program(env, expr, cel.StringType)
	if err != nil {
		return "", fmt.Errorf("presentation expression: %w", err)
	}
	out, err := prg.eval(act)
	if err != nil {
		return "", fmt.Errorf("presentation expression: %w", err)
	}
	s, ok := out.(types.String)
	if !ok {
		return "", fmt.Errorf("presentation expression yielded %s, want string", out.Type().TypeName())
	}
	return clip(string(s), MaxPresentBytes), nil
}

// clip cuts s to at most n bytes at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	i := n - len(ellipsis)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + ellipsis
}
