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

import "strconv"

// Where a call was when it was cancelled (Cancelled's stage).
const (
	// CancelledBeforeRunning: the call was cancelled before its body ran (pending, parked
	// for approval, queued behind its session).
	CancelledBeforeRunning = "BeforeRunning"
	// CancelledWhileRunning: the call's body was running; it was stopped, and every Pod of
	// its attempt confirmed it (gone, or no container left running) before the end was
	// recorded.
	CancelledWhileRunning = "WhileRunning"
	// CancelledWhileRunningUnconfirmed: the call's body was running; it was asked to stop,
	// but a Pod of its attempt never confirmed it did (its node did not report) and was
	// removed by force: the body may have run on.
	CancelledWhileRunningUnconfirmed = "WhileRunningUnconfirmed"
)

// MetaCancelled is the Result.Meta key saying where a cancelled call was
// (CancelledBeforeRunning, CancelledWhileRunning or CancelledWhileRunningUnconfirmed).
const MetaCancelled = "cancelled"

// Cancelled is the result of a call cancelled before it ended: isError, reason Cancelled,
// a message saying whether the body had started and whether it was seen to stop, and, for
// a running call, the attempt in meta. Nothing the sandbox wrote reaches it: a cancelled
// body's output is not read.
func Cancelled(stage string, attempt int) Result {
	return endedEarly(ReasonCancelled, "cancelled", stage, attempt)
}

// Deleted is the result of a call deleted before it ended (by an admin, a namespace
// deletion): isError, reason Deleted, whether the body had started and was seen to stop,
// and for a running call the attempt in meta. It is recorded before the call goes, so its
// audit record says so.
func Deleted(stage string, attempt int) Result {
	return endedEarly(ReasonDeleted, "deleted", stage, attempt)
}

func endedEarly(reason Reason, verb, stage string, attempt int) Result {
	meta := map[string]string{MetaCancelled: stage}
	msg := "the call was " + verb + " before it ran"
	switch stage {
	case CancelledWhileRunning:
		msg = "the call was " + verb + " while it ran; its execution was stopped"
	case CancelledWhileRunningUnconfirmed:
		msg = "the call was " + verb + " while it ran; its execution was asked to stop, but its sandbox " +
			"never confirmed that it did and was removed by force"
	}
	if stage != CancelledBeforeRunning {
		meta[MetaAttempt] = strconv.Itoa(max(attempt, 1))
	}
	return failed(reason, msg, meta)
}
