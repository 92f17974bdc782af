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

// SessionCall is one call of a session, as the scheduler sees it.
type SessionCall struct {
	// Key identifies the call (for example its name).
	Key string
	// ConcurrencySafe is the resolved Tool's concurrencySafe setting.
	ConcurrencySafe bool
	// Done is true once the call reached a terminal phase.
	Done bool
}

// Runnable returns, in order, the keys of the calls that may be running now, given the
// calls of one session in creation order. Safe calls between barriers run in parallel;
// an unsafe call (a barrier) runs only when every earlier call is done, and no later
// call runs until it is done. The result includes calls that are already running; the
// caller starts those that are not.
func Runnable(calls []SessionCall) []string {
	var out []string
	pending := false // an earlier call is not done
	for _, c := range calls {
		if c.Done {
			continue
		}
		if !c.ConcurrencySafe {
			if !pending {
				out = append(out, c.Key)
			}
			return out
		}
		out = append(out, c.Key)
		pending = true
	}
	return out
}
