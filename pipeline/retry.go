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

import "slices"

// RetryPolicy is a Tool's retry setting.
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts; values below 1 mean 1 (no retry).
	MaxAttempts int
	// OnReasons lists the failure reasons that retry; empty means none. Only execution
	// failures can retry (see RetryableReasons); other reasons here are ignored.
	OnReasons []Reason
}

// RetryableReasons are the reasons a RetryPolicy may name (the CRD's enum): failures of
// one execution attempt. Denials, schema and policy outcomes are never retried: a retry must not be a
// way around a decision.
var RetryableReasons = []Reason{
	ReasonDeadlineExceeded, ReasonOOMKilled, ReasonEvicted,
	ReasonNonZeroExit, ReasonImageNeverStarted, ReasonJobDeleted,
}

// RetryDecision says whether another attempt runs.
type RetryDecision struct {
	// Retry is true when attempt NextAttempt should run (as its own Job).
	Retry       bool
	NextAttempt int
}

// DecideRetry decides after attempt (1-based) ended with result r: retry when r is an
// error whose reason the policy lists and is retryable, and attempts remain.
func DecideRetry(p RetryPolicy, r Result, attempt int) RetryDecision {
	attempt = max(attempt, 1)
	if !r.IsError || attempt >= p.MaxAttempts {
		return RetryDecision{}
	}
	if !slices.Contains(RetryableReasons, r.Reason) || !slices.Contains(p.OnReasons, r.Reason) {
		return RetryDecision{}
	}
	return RetryDecision{Retry: true, NextAttempt: attempt + 1}
}
