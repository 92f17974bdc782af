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

func TestCancelled(t *testing.T) {
	before := Cancelled(CancelledBeforeRunning, 0)
	if !before.IsError || before.OK || before.Reason != ReasonCancelled || before.Meta[MetaCancelled] != CancelledBeforeRunning {
		t.Errorf("before running: %+v", before)
	}
	if _, ok := before.Meta[MetaAttempt]; ok {
		t.Errorf("a call that never ran has no attempt: %+v", before.Meta)
	}
	running := Cancelled(CancelledWhileRunning, 2)
	if !running.IsError || running.Reason != ReasonCancelled || running.Meta[MetaAttempt] != "2" || running.Content != running.Error {
		t.Errorf("while running: %+v", running)
	}
	if running.Error == before.Error {
		t.Errorf("the two messages should differ: %q", running.Error)
	}
	if _, err := FreezeResult(running); err != nil {
		t.Errorf("FreezeResult: %v", err)
	}
}

// A cancelled or deleted call says its execution was stopped only when every Pod of its
// attempt confirmed it; a Pod removed by force without confirming leaves that open.
func TestEndedEarlyMessages(t *testing.T) {
	for _, tc := range []struct {
		res     Result
		reason  Reason
		stage   string
		message string
	}{
		{Cancelled(CancelledBeforeRunning, 0), ReasonCancelled, CancelledBeforeRunning, "the call was cancelled before it ran"},
		{Cancelled(CancelledWhileRunning, 1), ReasonCancelled, CancelledWhileRunning, "the call was cancelled while it ran; its execution was stopped"},
		{Cancelled(CancelledWhileRunningUnconfirmed, 1), ReasonCancelled, CancelledWhileRunningUnconfirmed,
			"the call was cancelled while it ran; its execution was asked to stop, but its sandbox never confirmed that it did and was removed by force"},
		{Deleted(CancelledBeforeRunning, 0), ReasonDeleted, CancelledBeforeRunning, "the call was deleted before it ran"},
		{Deleted(CancelledWhileRunning, 2), ReasonDeleted, CancelledWhileRunning, "the call was deleted while it ran; its execution was stopped"},
		{Deleted(CancelledWhileRunningUnconfirmed, 2), ReasonDeleted, CancelledWhileRunningUnconfirmed,
			"the call was deleted while it ran; its execution was asked to stop, but its sandbox never confirmed that it did and was removed by force"},
	} {
		if tc.res.Reason != tc.reason || tc.res.Error != tc.message || tc.res.Content != tc.message || tc.res.Meta[MetaCancelled] != tc.stage {
			t.Errorf("%s %s: %+v", tc.reason, tc.stage, tc.res)
		}
		if _, ran := tc.res.Meta[MetaAttempt]; ran == (tc.stage == CancelledBeforeRunning) {
			t.Errorf("%s %s: meta %v: an attempt is named exactly when the body ran", tc.reason, tc.stage, tc.res.Meta)
		}
	}
}
