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
