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

package toolgatetest

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/onsi/gomega"
	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	toolgatev1alpha1 "github.com/toolgate/toolgate/api/v1alpha1"
)

// Gomega matchers in the style of kueue's pkg/util/testing/condition_matchers.go.

// HaveCondition matches an object whose status has a condition of that type and status;
// an empty reason matches any reason. It accepts every toolgate kind (by value or pointer),
// anything else with a Status.Conditions []metav1.Condition field, and []metav1.Condition.
func HaveCondition(condType string, status metav1.ConditionStatus, reason string) types.GomegaMatcher {
	want := fmt.Sprintf("condition %s=%s", condType, status)
	if reason != "" {
		want += ", reason " + reason
	}
	return gcustom.MakeMatcher(func(actual any) (bool, error) {
		conds, err := conditionsOf(actual)
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(conds, condType)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason), nil
	}).WithTemplate("Expected\n{{.FormattedActual}}\n{{.To}} have " + want)
}

// HavePhase matches a ToolCall (value or pointer) in that phase.
func HavePhase(p toolgatev1alpha1.ToolCallPhase) types.GomegaMatcher {
	return gomega.WithTransform(func(tc any) (toolgatev1alpha1.ToolCallPhase, error) {
		call, err := toolCallOf(tc)
		if err != nil {
			return "", err
		}
		return call.Status.Phase, nil
	}, gomega.Equal(p))
}

// BeTerminal matches a ToolCall (value or pointer) in a terminal phase: Succeeded, Failed
// or Denied.
func BeTerminal() types.GomegaMatcher { return terminalMatcher{} }

type terminalMatcher struct{}

func (terminalMatcher) Match(actual any) (bool, error) {
	call, err := toolCallOf(actual)
	if err != nil {
		return false, err
	}
	return call.Status.Phase.IsTerminal(), nil
}

func (terminalMatcher) FailureMessage(actual any) string {
	return fmt.Sprintf("Expected ToolCall %s to be terminal (Succeeded, Failed or Denied), but its phase is %q", nameOf(actual), phaseOf(actual))
}

func (terminalMatcher) NegatedFailureMessage(actual any) string {
	return fmt.Sprintf("Expected ToolCall %s not to be terminal, but its phase is %q", nameOf(actual), phaseOf(actual))
}

func nameOf(actual any) string {
	if call, err := toolCallOf(actual); err == nil {
		return call.Namespace + "/" + call.Name
	}
	return fmt.Sprintf("%T", actual)
}

func phaseOf(actual any) toolgatev1alpha1.ToolCallPhase {
	if call, err := toolCallOf(actual); err == nil {
		return call.Status.Phase
	}
	return ""
}

// HaveVerdict matches a ToolCall (value or pointer) with that verdict.
func HaveVerdict(v toolgatev1alpha1.Verdict) types.GomegaMatcher {
	return gomega.WithTransform(func(tc any) (toolgatev1alpha1.Verdict, error) {
		call, err := toolCallOf(tc)
		if err != nil {
			return "", err
		}
		return call.Status.Verdict, nil
	}, gomega.Equal(v))
}

// BeAPIError matches an API error with that status reason (e.g. metav1.StatusReasonInvalid,
// metav1.StatusReasonForbidden) whose message contains every given substring: the way to
// assert that the apiserver rejected a write for the expected rule.
func BeAPIError(reason metav1.StatusReason, substrings ...string) types.GomegaMatcher {
	return gcustom.MakeMatcher(func(err error) (bool, error) {
		if err == nil || apierrors.ReasonForError(err) != reason {
			return false, nil
		}
		for _, s := range substrings {
			if !strings.Contains(err.Error(), s) {
				return false, nil
			}
		}
		return true, nil
	}).WithTemplate(fmt.Sprintf("Expected\n{{.FormattedActual}}\n{{.To}} be an API error with reason %s containing %q", reason, substrings))
}

func toolCallOf(actual any) (*toolgatev1alpha1.ToolCall, error) {
	switch tc := actual.(type) {
	case *toolgatev1alpha1.ToolCall:
		if tc == nil {
			return nil, fmt.Errorf("nil *ToolCall")
		}
		return tc, nil
	case toolgatev1alpha1.ToolCall:
		return &tc, nil
	}
	return nil, fmt.Errorf("expected a ToolCall, got %T", actual)
}

// conditionsOf finds the status conditions of actual.
func conditionsOf(actual any) ([]metav1.Condition, error) {
	if conds, ok := actual.([]metav1.Condition); ok {
		return conds, nil
	}
	v := reflect.ValueOf(actual)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, fmt.Errorf("expected an object with conditions, got a nil %T", actual)
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if status := v.FieldByName("Status"); status.IsValid() && status.Kind() == reflect.Struct {
			if c := status.FieldByName("Conditions"); c.IsValid() {
				if conds, ok := c.Interface().([]metav1.Condition); ok {
					return conds, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("expected an object with Status.Conditions []metav1.Condition, got %T", actual)
}
