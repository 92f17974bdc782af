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
	"sync"
	"testing"
)

// TestConcurrentUse runs whole calls from many goroutines over one Compiler, one
// compiled schema and shared policies (run with -race to check for data races).
func TestConcurrentUse(t *testing.T) {
	c := newTestCompiler(t)
	policies := benchPolicies(c)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				schema, err := c.CompileSchema([]byte(benchSchema))
				if err != nil {
					errs <- err
					return
				}
				args := fmt.Sprintf(`{"path":"/w/%d","pattern":"p%d"}`, g, i)
				a := Admit(AdmitInput{Arguments: []byte(args), Schema: schema, Policies: policies,
					Call: CallInfo{Requester: "alice"}})
				if a.Final.Verdict != Allow {
					errs <- fmt.Errorf("goroutine %d call %d: %+v", g, i, a.Final)
					return
				}
				if _, err := c.PresentCall(`arguments.path`, Input{Arguments: a.Frozen}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
