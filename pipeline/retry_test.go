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
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecideRetry(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 3, OnReasons: []Reason{ReasonEvicted, ReasonNonZeroExit, ReasonPolicyDenied}}
	fail := func(r Reason) Result { return Result{IsError: true, Reason: r} }
	tests := []struct {
		name    string
		policy  RetryPolicy
		result  Result
		attempt int
		want    RetryDecision
	}{
		{"listed reason retries", p, fail(ReasonEvicted), 1, RetryDecision{Retry: true, NextAttempt: 2}},
		{"second attempt retries", p, fail(ReasonNonZeroExit), 2, RetryDecision{Retry: true, NextAttempt: 3}},
		{"attempts exhausted", p, fail(ReasonEvicted), 3, RetryDecision{}},
		{"unlisted reason is final", p, fail(ReasonOOMKilled), 1, RetryDecision{}},
		{"success is final", p, Result{OK: true, Reason: ReasonSucceeded}, 1, RetryDecision{}},
		{"decisions never retry even if listed", p, fail(ReasonPolicyDenied), 1, RetryDecision{}},
		{"tool errors are answers, not failures", RetryPolicy{MaxAttempts: 3, OnReasons: []Reason{ReasonToolError}}, fail(ReasonToolError), 1, RetryDecision{}},
		{"no policy no retry", RetryPolicy{}, fail(ReasonEvicted), 1, RetryDecision{}},
		{"empty reasons no retry", RetryPolicy{MaxAttempts: 5}, fail(ReasonEvicted), 1, RetryDecision{}},
		{"attempt zero counts as first", p, fail(ReasonEvicted), 0, RetryDecision{Retry: true, NextAttempt: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DecideRetry(tc.policy, tc.result, tc.attempt)); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}
