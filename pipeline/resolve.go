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
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Registration is one registered tool (a ClusterTool or a namespaced Tool).
type Registration struct {
	// Name is the model-facing name (spec.name, default metadata.name).
	Name string
	// Scope is the ToolScope a namespaced Tool registers in; "" is the namespace layer.
	// It is ignored for cluster tools.
	Scope string
	// Key identifies the object (UID or namespace/name); it breaks CreatedAt ties.
	Key string
	// CreatedAt orders duplicates: the oldest registration of a name in a layer wins.
	CreatedAt time.Time
	// Ready is false when the Tool is not usable (for example its schema is invalid).
	Ready bool
	// SpecDigest is the digest of the Tool spec, recorded by calls that resolve to it.
	SpecDigest string
}

// Scope is the pipeline's view of a ToolScope.
type Scope struct {
	Name string
	// Parent names another ToolScope in the namespace; "" means none.
	Parent string
	// Allow lists the tool names the scope permits; empty permits all.
	Allow []string
	// Deny lists tool names the scope forbids; deny wins over allow.
	Deny []string
	// Subjects lists the requesters allowed to call in this scope; empty means anyone.
	Subjects []string
	// RuntimeClassName, when set, is the RuntimeClass every call in this scope (and in the
	// scopes below it) must run under.
	RuntimeClassName string
}

// ResolveError explains why a tool or scope could not be resolved.
type ResolveError struct {
	// Reason is ToolNotFound, ToolRestricted, ToolNotReady, ScopeCycle, UnknownScope or
	// UnknownParent.
	Reason Reason
	Msg    string
}

func (e *ResolveError) Error() string { return e.Msg }

func resolveErr(r Reason, format string, args ...any) *ResolveError {
	return &ResolveError{Reason: r, Msg: fmt.Sprintf(format, args...)}
}

// Duplicate is a registration that lost to an older one with the same name in the same
// layer; it should be marked Registered=False with ReasonDuplicateName.
type Duplicate struct {
	Registration Registration
	// WinnerKey is the Key of the registration that stays.
	WinnerKey string
}

// Index is a precomputed view of one namespace's registrations and scopes (plus the
// cluster layer). Resolution costs O(scope depth) map lookups. An Index is immutable and
// safe for concurrent use; rebuild it when registrations change.
type Index struct {
	cluster    map[string]*Registration
	namespace  map[string]*Registration
	scopes     map[string]*scopeNode
	duplicates []Duplicate
}

type scopeNode struct {
	name     string
	chain    []*scopeNode // this scope first, then its ancestors
	err      *ResolveError
	allow    map[string]bool // nil permits all
	deny     map[string]bool
	subjects map[string]bool // nil admits anyone
	// runtimeClass is the RuntimeClass the scope requires; "" requires none.
	runtimeClass string
	tools        map[string]*Registration
}

// NewIndex builds the index. Cycles and unknown parents are not build errors: they are
// reported by Resolve, Visible and IsSubject for the scopes they affect.
func NewIndex(clusterTools, namespaceTools []Registration, scopes []Scope) *Index {
	idx := &Index{scopes: make(map[string]*scopeNode, len(scopes))}
	idx.cluster = idx.layer(clusterTools)
	for _, s := range scopes {
		if _, seen := idx.scopes[s.Name]; !seen {
			idx.scopes[s.Name] = &scopeNode{name: s.Name, allow: setOrNil(s.Allow),
				deny: setOrNil(s.Deny), subjects: setOrNil(s.Subjects), runtimeClass: s.RuntimeClassName}
		}
	}
	byScope := map[string][]Registration{}
	for _, r := range namespaceTools {
		byScope[r.Scope] = append(byScope[r.Scope], r)
	}
	idx.namespace = idx.layer(byScope[""])
	for name, regs := range byScope {
		if n := idx.scopes[name]; n != nil && name != "" {
			n.tools = idx.layer(regs)
		}
	}
	parents := make(map[string]string, len(scopes))
	for _, s := range scopes {
		if _, seen := parents[s.Name]; !seen {
			parents[s.Name] = s.Parent
		}
	}
	for _, n := range idx.scopes {
		n.chain, n.err = idx.chain(n, parents)
	}
	slices.SortFunc(idx.duplicates, func(a, b Duplicate) int {
		return cmp.Compare(a.Registration.Key, b.Registration.Key)
	})
	return idx
}

// layer indexes one layer by name; the oldest registration of a name wins.
func (idx *Index) layer(regs []Registration) map[string]*Registration {
	sorted := slices.Clone(regs)
	slices.SortStableFunc(sorted, func(a, b Registration) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	m := make(map[string]*Registration, len(sorted))
	for i := range sorted {
		r := &sorted[i]
		if w, dup := m[r.Name]; dup {
			idx.duplicates = append(idx.duplicates, Duplicate{Registration: *r, WinnerKey: w.Key})
			continue
		}
		m[r.Name] = r
	}
	return m
}

// chain walks the parents of n, detecting cycles and unknown parents.
func (idx *Index) chain(n *scopeNode, parents map[string]string) ([]*scopeNode, *ResolveError) {
	chain := []*scopeNode{n}
	seen := map[string]bool{n.name: true}
	for p := parents[n.name]; p != ""; p = parents[p] {
		if seen[p] {
			return nil, resolveErr(ReasonScopeCycle, "scope %q: parent chain loops at %q", n.name, p)
		}
		next := idx.scopes[p]
		if next == nil {
			return nil, resolveErr(ReasonUnknownParent, "scope %q: parent scope %q does not exist", n.name, p)
		}
		seen[p] = true
		chain = append(chain, next)
	}
	return chain, nil
}

func setOrNil(names []string) map[string]bool {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Duplicates lists the registrations that lost to an older one of the same name in the
// same layer, sorted by Key.
func (idx *Index) Duplicates() []Duplicate { return slices.Clone(idx.duplicates) }

// scopeChain returns the chain of scope ("" has none).
func (idx *Index) scopeChain(scope string) ([]*scopeNode, error) {
	if scope == "" {
		return nil, nil
	}
	n := idx.scopes[scope]
	if n == nil {
		return nil, resolveErr(ReasonUnknownScope, "scope %q does not exist", scope)
	}
	if n.err != nil {
		return nil, n.err
	}
	return n.chain, nil
}

// Chain returns the scope's resolved chain, the scope itself first, then its parent and
// so on (ToolScope status.chain), or a *ResolveError with ReasonUnknownScope,
// ReasonScopeCycle or ReasonUnknownParent (its Ready condition).
func (idx *Index) Chain(scope string) ([]string, error) {
	chain, err := idx.scopeChain(scope)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(chain))
	for i, s := range chain {
		names[i] = s.name
	}
	return names, nil
}

// Resolve finds the registration a call in scope gets for name: the scope's own tools,
// then each ancestor's, then the namespace layer, then the cluster layer; the nearest
// wins. The tool must be permitted by every scope on the chain (an empty allow list
// permits all; deny wins; so a child can only narrow) and the winner must be Ready.
// Errors are *ResolveError.
func (idx *Index) Resolve(scope, name string) (Registration, error) {
	chain, err := idx.scopeChain(scope)
	if err != nil {
		return Registration{}, err
	}
	r := idx.nearest(chain, name)
	if r == nil {
		return Registration{}, resolveErr(ReasonToolNotFound, "tool %q is not registered", name)
	}
	if s := restrictedBy(chain, name); s != "" {
		return Registration{}, resolveErr(ReasonToolRestricted, "tool %q is not permitted in scope %q", name, s)
	}
	if !r.Ready {
		return Registration{}, resolveErr(ReasonToolNotReady, "tool %q is not ready", name)
	}
	return *r, nil
}

func (idx *Index) nearest(chain []*scopeNode, name string) *Registration {
	for _, s := range chain {
		if r := s.tools[name]; r != nil {
			return r
		}
	}
	if r := idx.namespace[name]; r != nil {
		return r
	}
	return idx.cluster[name]
}

// restrictedBy returns the first scope on the chain that does not permit name, or "".
func restrictedBy(chain []*scopeNode, name string) string {
	for _, s := range chain {
		if s.deny[name] || (s.allow != nil && !s.allow[name]) {
			return s.name
		}
	}
	return ""
}

// Visible lists every tool a call in scope would resolve successfully (permitted and
// Ready), sorted by name: what an MCP gateway lists for the scope.
func (idx *Index) Visible(scope string) ([]Registration, error) {
	chain, err := idx.scopeChain(scope)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, s := range chain {
		for n := range s.tools {
			names[n] = true
		}
	}
	for _, layer := range []map[string]*Registration{idx.namespace, idx.cluster} {
		for n := range layer {
			names[n] = true
		}
	}
	out := make([]Registration, 0, len(names))
	for n := range names {
		if r := idx.nearest(chain, n); r.Ready && restrictedBy(chain, n) == "" {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b Registration) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// IsSubject reports whether requester may call in scope: every scope on the chain that
// lists subjects must list the requester (scopes without subjects admit anyone, and the
// namespace layer, scope "", admits anyone). Matching is exact on the identity string.
func (idx *Index) IsSubject(scope, requester string) (bool, error) {
	chain, err := idx.scopeChain(scope)
	if err != nil {
		return false, err
	}
	for _, s := range chain {
		if s.subjects != nil && !s.subjects[requester] {
			return false, nil
		}
	}
	return true, nil
}

// RuntimeClassGuard checks the RuntimeClass a call's body would run under (runtimeClass:
// the tool's sandbox.runtimeClassName, else the operator's default; "" for the node's
// default runtime) against every scope on the chain that requires one: Allow, or Deny with
// ReasonRuntimeClassRequired naming the first scope it fails (or the scope's resolution
// reason).
func (idx *Index) RuntimeClassGuard(scope, tool, runtimeClass string) Decision {
	chain, err := idx.scopeChain(scope)
	if err != nil {
		var re *ResolveError
		if errors.As(err, &re) {
			return deny(re.Reason, re.Msg)
		}
		return deny(ReasonUnknownScope, err.Error())
	}
	for _, s := range chain {
		if s.runtimeClass != "" && s.runtimeClass != runtimeClass {
			under := "the node's default runtime"
			if runtimeClass != "" {
				under = fmt.Sprintf("RuntimeClass %q", runtimeClass)
			}
			return deny(ReasonRuntimeClassRequired, fmt.Sprintf("scope %q requires RuntimeClass %q; tool %q would run under %s",
				s.name, s.runtimeClass, tool, under))
		}
	}
	return allow("the tool runs under the RuntimeClass the scope chain requires")
}

// SubjectGuard is IsSubject as a guard Decision for AdmitInput.Guards: Allow, or Deny
// with ReasonNotASubject (or the scope's resolution reason).
func (idx *Index) SubjectGuard(scope, requester string) Decision {
	ok, err := idx.IsSubject(scope, requester)
	switch {
	case err != nil:
		var re *ResolveError
		if errors.As(err, &re) {
			return deny(re.Reason, re.Msg)
		}
		return deny(ReasonUnknownScope, err.Error())
	case !ok:
		return deny(ReasonNotASubject, fmt.Sprintf("%s is not a subject of scope %q", requester, scope))
	}
	return allow("the requester is a subject of the scope")
}
