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
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func reg(name, scope, key string, age int) Registration {
	return Registration{Name: name, Scope: scope, Key: key, CreatedAt: t0.Add(time.Duration(age) * time.Minute), Ready: true}
}

func testIndex() *Index {
	cluster := []Registration{reg("grep", "", "c-grep", 0), reg("curl", "", "c-curl", 0), reg("ls", "", "c-ls", 0), reg("date", "", "c-date", 0)}
	notReady := reg("broken", "", "n-broken", 0)
	notReady.Ready = false
	ns := []Registration{
		reg("grep", "", "n-grep", 0), // shadows the cluster grep
		reg("sed", "", "n-sed-new", 5),
		reg("sed", "", "n-sed-old", 1), // older: wins
		reg("curl", "team", "t-curl", 0),
		reg("deploy", "prod", "p-deploy", 0),
		reg("deploy", "prod", "p-deploy-b", 0), // same age: key order, "p-deploy" wins
		notReady,
		reg("orphan", "missing", "o", 0), // scope does not exist: never visible
	}
	scopes := []Scope{
		{Name: "team", Deny: []string{"ls"}, Subjects: []string{"alice", "bob"}},
		{Name: "prod", Parent: "team", Allow: []string{"deploy", "grep", "curl", "ls"}, Subjects: []string{"alice"}},
		{Name: "open", Parent: "team"},
		{Name: "loop-a", Parent: "loop-b"},
		{Name: "loop-b", Parent: "loop-a"},
		{Name: "child-of-loop", Parent: "loop-a"},
		{Name: "dangling", Parent: "nowhere"},
	}
	return NewIndex(cluster, ns, scopes)
}

func TestResolve(t *testing.T) {
	idx := testIndex()
	tests := []struct {
		scope, name string
		wantKey     string
		wantReason  Reason
	}{
		{"", "grep", "n-grep", ""},
		{"", "date", "c-date", ""},
		{"", "sed", "n-sed-old", ""},
		{"", "curl", "c-curl", ""},
		{"team", "curl", "t-curl", ""},
		{"open", "curl", "t-curl", ""},
		{"prod", "curl", "t-curl", ""},
		{"prod", "deploy", "p-deploy", ""},
		{"team", "deploy", "", ReasonToolNotFound},
		{"team", "ls", "", ReasonToolRestricted},
		{"prod", "ls", "", ReasonToolRestricted},  // allowed by prod, denied by its parent: deny wins
		{"open", "ls", "", ReasonToolRestricted},  // inherited deny
		{"prod", "sed", "", ReasonToolRestricted}, // not in prod's allow list
		{"prod", "date", "", ReasonToolRestricted},
		{"", "nope", "", ReasonToolNotFound},
		{"", "broken", "", ReasonToolNotReady},
		{"", "orphan", "", ReasonToolNotFound},
		{"missing", "grep", "", ReasonUnknownScope},
		{"loop-a", "grep", "", ReasonScopeCycle},
		{"child-of-loop", "grep", "", ReasonScopeCycle},
		{"dangling", "grep", "", ReasonUnknownParent},
	}
	for _, tc := range tests {
		t.Run(tc.scope+"/"+tc.name, func(t *testing.T) {
			r, err := idx.Resolve(tc.scope, tc.name)
			var re *ResolveError
			if tc.wantReason != "" {
				if !errors.As(err, &re) || re.Reason != tc.wantReason {
					t.Fatalf("Resolve = %+v, %v; want %s", r, err, tc.wantReason)
				}
				return
			}
			if err != nil || r.Key != tc.wantKey {
				t.Fatalf("Resolve = %q, %v; want %q", r.Key, err, tc.wantKey)
			}
		})
	}
}

func TestVisible(t *testing.T) {
	idx := testIndex()
	keys := func(scope string) []string {
		regs, err := idx.Visible(scope)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		var out []string
		for _, r := range regs {
			out = append(out, r.Name+"="+r.Key)
		}
		return out
	}
	tests := map[string][]string{
		"":       {"curl=c-curl", "date=c-date", "grep=n-grep", "ls=c-ls", "sed=n-sed-old"},
		"team":   {"curl=t-curl", "date=c-date", "grep=n-grep", "sed=n-sed-old"},
		"prod":   {"curl=t-curl", "deploy=p-deploy", "grep=n-grep"},
		"loop-a": {`error: scope "loop-a": parent chain loops at "loop-a"`},
	}
	for scope, want := range tests {
		if diff := cmp.Diff(want, keys(scope)); diff != "" {
			t.Errorf("Visible(%q) (-want +got):\n%s", scope, diff)
		}
	}
}

func TestDuplicates(t *testing.T) {
	got := testIndex().Duplicates()
	want := []Duplicate{
		{Registration: reg("sed", "", "n-sed-new", 5), WinnerKey: "n-sed-old"},
		{Registration: reg("deploy", "prod", "p-deploy-b", 0), WinnerKey: "p-deploy"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("duplicates (-want +got):\n%s", diff)
	}
}

func TestIsSubject(t *testing.T) {
	idx := testIndex()
	tests := []struct {
		scope, who string
		want       bool
		reason     Reason
	}{
		{"", "anyone", true, ReasonPolicyAllowed},
		{"team", "bob", true, ReasonPolicyAllowed},
		{"team", "mallory", false, ReasonNotASubject},
		{"prod", "alice", true, ReasonPolicyAllowed},
		{"prod", "bob", false, ReasonNotASubject},  // in team but not in prod
		{"open", "bob", true, ReasonPolicyAllowed}, // open lists nobody: team's list applies
		{"open", "mallory", false, ReasonNotASubject},
		{"missing", "alice", false, ReasonUnknownScope},
		{"loop-b", "alice", false, ReasonScopeCycle},
	}
	for _, tc := range tests {
		ok, _ := idx.IsSubject(tc.scope, tc.who)
		if ok != tc.want {
			t.Errorf("IsSubject(%q, %q) = %v", tc.scope, tc.who, ok)
		}
		if d := idx.SubjectGuard(tc.scope, tc.who); d.Reason != tc.reason || (d.Verdict == Allow) != tc.want {
			t.Errorf("SubjectGuard(%q, %q) = %+v", tc.scope, tc.who, d)
		}
	}
}

func TestResolveScale(t *testing.T) {
	idx, scopes := benchIndex(1000, 5)
	leaf := scopes[len(scopes)-1]
	vis, err := idx.Visible(leaf)
	if err != nil {
		t.Fatal(err)
	}
	if len(vis) != 999 { // tool-13 is denied along the chain
		t.Fatalf("leaf sees %d tools, want 999", len(vis))
	}
	for _, r := range vis {
		if got, err := idx.Resolve(leaf, r.Name); err != nil || got.Key != r.Key {
			t.Fatalf("Resolve(%s) = %v, %v; Visible says %s", r.Name, got.Key, err, r.Key)
		}
	}
}

func TestChain(t *testing.T) {
	idx := testIndex()
	tests := []struct {
		scope  string
		want   []string
		reason Reason
	}{
		{"prod", []string{"prod", "team"}, ""},
		{"team", []string{"team"}, ""},
		{"", []string{}, ""},
		{"loop-a", nil, ReasonScopeCycle},
		{"dangling", nil, ReasonUnknownParent},
		{"missing", nil, ReasonUnknownScope},
	}
	for _, tc := range tests {
		got, err := idx.Chain(tc.scope)
		var re *ResolveError
		if tc.reason != "" {
			if !errors.As(err, &re) || re.Reason != tc.reason {
				t.Errorf("Chain(%q) error = %v, want %s", tc.scope, err, tc.reason)
			}
			continue
		}
		if diff := cmp.Diff(tc.want, got); err != nil || diff != "" {
			t.Errorf("Chain(%q) = %v, %v (-want +got):\n%s", tc.scope, got, err, diff)
		}
	}
}

func TestRuntimeClassGuard(t *testing.T) {
	idx := NewIndex(nil, nil, []Scope{
		{Name: "sandboxed", RuntimeClassName: "gvisor"},
		{Name: "below", Parent: "sandboxed"},
		{Name: "other", Parent: "sandboxed", RuntimeClassName: "kata"},
		{Name: "free"},
	})
	tests := []struct {
		scope, runtimeClass string
		reason              Reason
	}{
		{"", "", ReasonPolicyAllowed},
		{"free", "", ReasonPolicyAllowed},
		{"sandboxed", "gvisor", ReasonPolicyAllowed},
		{"sandboxed", "", ReasonRuntimeClassRequired},
		{"sandboxed", "runc", ReasonRuntimeClassRequired},
		{"below", "gvisor", ReasonPolicyAllowed}, // inherited from the parent
		{"below", "", ReasonRuntimeClassRequired},
		{"other", "gvisor", ReasonRuntimeClassRequired}, // two scopes, two classes: nothing runs
		{"other", "kata", ReasonRuntimeClassRequired},
		{"missing", "gvisor", ReasonUnknownScope},
	}
	for _, tc := range tests {
		d := idx.RuntimeClassGuard(tc.scope, "sh", tc.runtimeClass)
		if d.Reason != tc.reason || (d.Verdict == Allow) != (tc.reason == ReasonPolicyAllowed) {
			t.Errorf("RuntimeClassGuard(%q, %q) = %+v, want %s", tc.scope, tc.runtimeClass, d, tc.reason)
		}
	}
	d := idx.RuntimeClassGuard("below", "sh", "")
	for _, want := range []string{`scope "sandboxed"`, `"gvisor"`, `tool "sh"`, "the node's default runtime"} {
		if !strings.Contains(d.Message, want) {
			t.Errorf("message %q does not name %s", d.Message, want)
		}
	}
}
