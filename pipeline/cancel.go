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
	// CancelledWhileRunning: the call's body was running; its Job was stopped.
	CancelledWhileRunning = "WhileRunning"
)

// MetaCancelled is the Result.Meta key saying where a cancelled call was
// (CancelledBeforeRunning or CancelledWhileRunning).
const MetaCancelled = "cancelled"

// Cancelled is the result of a call cancelled before it ended: isError, reason Cancelled,
// a message saying whether the body had started, and, for a running call, the attempt in
// meta. Nothing the sandbox wrote reaches it: a cancelled body's output is not read.
func Cancelled(stage string, attempt int) Result {
	meta := map[string]string{MetaCancelled: stage}
	msg := "the call was cancelled before it ran"
	if stage == CancelledWhileRunning {
		msg = "the call was cancelled while it ran; its execution was stopped"
		meta[MetaAttempt] = strconv.Itoa(max(attempt, 1))
	}
	return failed(ReasonCancelled, msg, meta)
}

// Deleted is the result of a call deleted before it ended (by an admin, a namespace
// deletion): isError, reason Deleted, whether the body had started, and for a running call
// the attempt in meta. It is recorded before the call goes, so its audit record says so.
func Deleted(stage string, attempt int) Result {
	meta := map[string]string{MetaCancelled: stage}
	msg := "the call was deleted before it ran"
	if stage == CancelledWhileRunning {
		msg = "the call was deleted while it ran; its execution was stopped"
		meta[MetaAttempt] = strconv.Itoa(max(attempt, 1))
	}
	return failed(ReasonDeleted, msg, meta)
}
