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

func TestRunnable(t *testing.T) {
	safe := func(k string) SessionCall { return SessionCall{Key: k, ConcurrencySafe: true} }
	unsafe := func(k string) SessionCall { return SessionCall{Key: k} }
	done := func(c SessionCall) SessionCall { c.Done = true; return c }
	tests := []struct {
		name  string
		calls []SessionCall
		want  []string
	}{
		{"empty", nil, nil},
		{"safe calls run together", []SessionCall{safe("a"), safe("b"), safe("c")}, []string{"a", "b", "c"}},
		{"barrier waits for earlier", []SessionCall{safe("a"), unsafe("b"), safe("c")}, []string{"a"}},
		{"barrier first blocks later", []SessionCall{unsafe("a"), safe("b")}, []string{"a"}},
		{"barrier runs once earlier done", []SessionCall{done(safe("a")), unsafe("b"), safe("c")}, []string{"b"}},
		{"after barrier done, next group", []SessionCall{done(safe("a")), done(unsafe("b")), safe("c"), safe("d"), unsafe("e"), safe("f")}, []string{"c", "d"}},
		{"two barriers in a row", []SessionCall{unsafe("a"), unsafe("b")}, []string{"a"}},
		{"all done", []SessionCall{done(unsafe("a")), done(safe("b"))}, nil},
		{"done calls later do not matter", []SessionCall{safe("a"), done(unsafe("b")), safe("c")}, []string{"a", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Runnable(tc.calls)); diff != "" {
				t.Errorf("runnable (-want +got):\n%s", diff)
			}
		})
	}
}
