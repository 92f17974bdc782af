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
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"

	"github.com/toolgate/toolgate/pipeline/internal/canonjson"
)

// CEL variable names.
const (
	varTool      = "tool"
	varArguments = "arguments"
	varCall      = "call"
	varResult    = "result"
)

// newEnvs builds the CEL environment for admission (tool, arguments, call) and the one
// for results (the same plus result).
func newEnvs() (admission, results *cel.Env, err error) {
	common := []cel.EnvOption{
		cel.Variable(varTool, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varArguments, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varCall, cel.MapType(cel.StringType, cel.DynType)),
		cel.CustomTypeAdapter(jsonAdapter{}),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Math(),
		cel.ParserExpressionSizeLimit(maxExpressionBytes),
	}
	if admission, err = cel.NewEnv(common...); err != nil {
		return nil, nil, err
	}
	results, err = admission.Extend(cel.Variable(varResult, cel.MapType(cel.StringType, cel.DynType)))
	return admission, results, err
}

// maxExpressionBytes bounds the source size of one CEL expression.
const maxExpressionBytes = 16 << 10

// activation binds the CEL variables for one call. It is built once per call and shared
// by every policy. The arguments are the Frozen's own tree, read in place through
// jsonAdapter; CEL cannot mutate it, and values leaving CEL are copied by celToJSON, so
// no policy can change what a later stage sees. tool and call are records read in place
// (see record), so an activation belongs to one goroutine.
type activation struct {
	in         Input
	tool, call record
	args       any
	result     map[string]any
	// bound is sizeBound's answer once computed (0: not yet).
	bound uint64
}

var _ interpreter.Activation = (*activation)(nil)

func newActivation(in Input) *activation {
	a := &activation{in: in}
	if in.Arguments != nil {
		a.args = in.Arguments.tree()
	} else {
		a.args = map[string]any{}
	}
	return a
}

// withResult returns a copy of a that also binds result.
func (a *activation) withResult(r Result) *activation {
	b := *a
	b.result = map[string]any{"content": r.Content, "isError": r.IsError}
	b.bound = 0
	return &b
}

// sizeBound returns a bound of the CEL size (runes of a string, entries of a list or
// map) of every value reachable from the bound variables, at least 1 (the size CEL
// gives scalars); see program. The arguments' canonical length bounds every size in
// them: each rune, item or entry takes at least one byte of it.
func (a *activation) sizeBound() uint64 {
	if a.bound != 0 {
		return a.bound
	}
	n := 4 // the entries of call, the largest of the maps built here
	if a.in.Arguments != nil {
		n = max(n, a.in.Arguments.Len())
	}
	t, c := a.in.Tool, a.in.Call
	n = max(n, len(t.Name), len(t.Scope), stringMapBound(t.Annotations),
		len(c.Namespace), len(c.Session), len(c.Requester), stringMapBound(c.Labels))
	a.bound = uint64(n)
	if a.result != nil {
		a.bound = max(a.bound, treeBound(a.result["content"], 0))
	}
	return a.bound
}

func stringMapBound(m map[string]string) int {
	n := len(m)
	for k, v := range m {
		n = max(n, len(k), len(v))
	}
	return n
}

// treeBound is sizeBound for a JSON tree as Result.Content holds it; unknown types (and
// trees too deep to walk) give the largest bound, so that evaluation stays tracked.
func treeBound(v any, depth int) uint64 {
	if depth > canonjson.MaxEncodeDepth {
		return math.MaxUint64
	}
	switch t := v.(type) {
	case nil, bool, json.Number, float64, int, int64:
		return 1
	case string:
		return uint64(max(len(t), 1))
	case []any:
		n := uint64(len(t))
		for _, e := range t {
			n = max(n, treeBound(e, depth+1))
		}
		return n
	case map[string]any:
		n := uint64(len(t))
		for k, e := range t {
			n = max(n, uint64(len(k)), treeBound(e, depth+1))
		}
		return n
	case map[string]string:
		return uint64(stringMapBound(t))
	}
	return math.MaxUint64
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varTool:
		if a.tool.in == nil {
			a.tool = record{in: &a.in, tool: true}
		}
		return &a.tool, true
	case varArguments:
		return a.args, true
	case varCall:
		if a.call.in == nil {
			a.call = record{in: &a.in}
		}
		return &a.call, true
	case varResult:
		return a.result, a.result != nil
	}
	return nil, false
}

// toolMap and callMap are the CEL variables tool and call as maps.
func toolMap(t ToolInfo) map[string]any {
	return map[string]any{"name": t.Name, "scope": t.Scope, "annotations": nonNilMap(t.Annotations), "egress": egressList(t.Egress),
		"credentials": credentialList(t.Credentials)}
}

// credentialList is tool.credentials: [{"name", "secret", "key", "as"}], empty for a tool
// without one.
func credentialList(cs []Credential) []any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		out = append(out, map[string]any{"name": c.Name, "secret": c.Secret, "key": c.Key, "as": c.As})
	}
	return out
}

// egressList is tool.egress: [{"host": h, "port": p}], empty for a tool without one.
func egressList(hps []HostPort) []any {
	out := make([]any, 0, len(hps))
	for _, hp := range hps {
		out = append(out, map[string]any{"host": hp.Host, "port": int64(hp.Port)})
	}
	return out
}

func callMap(c CallInfo) map[string]any {
	return map[string]any{"namespace": c.Namespace, "session": c.Session,
		"requester": c.Requester, "requesterGroups": nonNilSlice(c.RequesterGroups), "labels": nonNilMap(c.Labels)}
}

// record is the CEL variable tool or call: the map toolMap or callMap builds, except that
// field lookups (call.requester, tool.annotations.?risk: nearly every use) read the
// Input in place instead of building the map, which took a third of a policy's time.
// Every other operation (equality, iteration, size, conversion, non-string keys) goes to
// that map, built on first use, so the variable behaves exactly as the map did.
type record struct {
	in   *Input
	tool bool // tool, else call
	full traits.Mapper
}

var _ traits.Mapper = (*record)(nil)

// field returns the CEL value of a field, as the map would give it; ok is false for
// other keys.
func (r *record) field(key string) (v ref.Val, ok bool) {
	if r.tool {
		t := &r.in.Tool
		switch key {
		case "name":
			return types.String(t.Name), true
		case "scope":
			return types.String(t.Scope), true
		case "annotations":
			return stringMap{nonNilMap(t.Annotations)}, true
		case "egress":
			return jsonAdapter{}.NativeToValue(egressList(t.Egress)), true
		case "credentials":
			return jsonAdapter{}.NativeToValue(credentialList(t.Credentials)), true
		}
		return nil, false
	}
	c := &r.in.Call
	switch key {
	case "namespace":
		return types.String(c.Namespace), true
	case "session":
		return types.String(c.Session), true
	case "requester":
		return types.String(c.Requester), true
	case "requesterGroups":
		return types.NewStringList(jsonAdapter{}, nonNilSlice(c.RequesterGroups)), true
	case "labels":
		return stringMap{nonNilMap(c.Labels)}, true
	}
	return nil, false
}

func (r *record) mapper() traits.Mapper {
	if r.full == nil {
		m := callMap(r.in.Call)
		if r.tool {
			m = toolMap(r.in.Tool)
		}
		r.full = types.NewStringInterfaceMap(jsonAdapter{}, m)
	}
	return r.full
}

// Find implements traits.Mapper.
func (r *record) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return r.mapper().Find(key)
	}
	return r.field(string(k))
}

// Get implements traits.Indexer.
func (r *record) Get(key ref.Val) ref.Val { return r.mapper().Get(key) }

// Contains implements traits.Container.
func (r *record) Contains(key ref.Val) ref.Val { return r.mapper().Contains(key) }

// Iterator implements traits.Iterable.
func (r *record) Iterator() traits.Iterator { return r.mapper().Iterator() }

// Size implements traits.Sizer.
func (r *record) Size() ref.Val { return r.mapper().Size() }

// ConvertToNative implements ref.Val.
func (r *record) ConvertToNative(t reflect.Type) (any, error) { return r.mapper().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (r *record) ConvertToType(t ref.Type) ref.Val { return r.mapper().ConvertToType(t) }

// Equal implements ref.Val.
func (r *record) Equal(other ref.Val) ref.Val { return r.mapper().Equal(other) }

// Type implements ref.Val.
func (r *record) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (r *record) Value() any { return r.mapper().Value() }

// stringMap is annotations or labels (map[string]string) as a CEL map. A struct of one
// map is stored in an interface without an allocation, and so is a lookup's miss; a
// lookup's hit costs the string's boxing. Every other operation goes to the map CEL's
// default adapter makes of it (built on each use), so it behaves exactly as that map.
type stringMap struct{ m map[string]string }

var _ traits.Mapper = stringMap{}

func (s stringMap) mapper() traits.Mapper {
	return types.DefaultTypeAdapter.NativeToValue(s.m).(traits.Mapper)
}

// Find implements traits.Mapper.
func (s stringMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return s.mapper().Find(key)
	}
	v, ok := s.m[string(k)]
	if !ok {
		return nil, false
	}
	return types.String(v), true
}

// Get implements traits.Indexer.
func (s stringMap) Get(key ref.Val) ref.Val { return s.mapper().Get(key) }

// Contains implements traits.Container.
func (s stringMap) Contains(key ref.Val) ref.Val { return s.mapper().Contains(key) }

// Iterator implements traits.Iterable.
func (s stringMap) Iterator() traits.Iterator { return s.mapper().Iterator() }

// Size implements traits.Sizer.
func (s stringMap) Size() ref.Val { return types.Int(len(s.m)) }

// ConvertToNative implements ref.Val.
func (s stringMap) ConvertToNative(t reflect.Type) (any, error) { return s.mapper().ConvertToNative(t) }

// ConvertToType implements ref.Val.
func (s stringMap) ConvertToType(t ref.Type) ref.Val { return s.mapper().ConvertToType(t) }

// Equal implements ref.Val.
func (s stringMap) Equal(other ref.Val) ref.Val { return s.mapper().Equal(other) }

// Type implements ref.Val.
func (s stringMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (s stringMap) Value() any { return s.m }

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

// emptyStringMap stands for absent annotations and labels; CEL cannot change it.
var emptyStringMap = map[string]string{}

// nonNilSlice is s, or an empty list for nil: call.requesterGroups is always a list.
func nonNilSlice(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return emptyStringMap
	}
	return m
}

// jsonAdapter lets CEL read decoded JSON trees in place, without copying them: maps
// and lists are wrapped lazily and json.Number becomes int when the literal is an integer
// that fits int64, otherwise double (which may round, or be ±Inf for 1e400: comparisons
// on such values are approximate, the canonical bytes stay exact). CEL has no operation
// that mutates its inputs, so sharing the tree is safe.
type jsonAdapter struct{}

// NativeToValue implements types.Adapter.
func (a jsonAdapter) NativeToValue(v any) ref.Val {
	switch t := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
			return types.Int(i)
		}
		f, _ := strconv.ParseFloat(string(t), 64) // out of range gives ±Inf, as documented
		return types.Double(f)
	case map[string]any:
		return types.NewStringInterfaceMap(a, t)
	case []any:
		return types.NewDynamicList(a, t)
	case ref.Val:
		return t // as the default adapter does, without its long type switch
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// celToJSON converts a CEL value into a fresh JSON tree (json.Number numbers). It fails
// on values JSON cannot hold (NaN, ±Inf, bytes, non-string map keys, invalid UTF-8).
func celToJSON(v ref.Val, depth int) (any, error) {
	if depth > canonjson.MaxEncodeDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", canonjson.MaxEncodeDepth)
	}
	switch t := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(t), nil
	case types.String:
		if !utf8.ValidString(string(t)) {
			return nil, fmt.Errorf("string is not valid UTF-8")
		}
		return string(t), nil
	case types.Int:
		return json.Number(strconv.FormatInt(int64(t), 10)), nil
	case types.Uint:
		return json.Number(strconv.FormatUint(uint64(t), 10)), nil
	case types.Double:
		f := float64(t)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %v is not representable in JSON", f)
		}
		return json.Number(canonjson.NormalizeNumber(strconv.FormatFloat(f, 'g', -1, 64))), nil
	case traits.Mapper:
		return celMapToJSON(t, depth)
	case traits.Lister:
		return celListToJSON(t, depth)
	}
	return nil, fmt.Errorf("a value of CEL type %s cannot be JSON content", v.Type().TypeName())
}

func celListToJSON(l traits.Lister, depth int) (any, error) {
	n, ok := l.Size().(types.Int)
	if !ok {
		return nil, fmt.Errorf("list has no size")
	}
	out := make([]any, 0, int(n))
	for it := l.Iterator(); it.HasNext() == types.True; {
		e, err := celToJSON(it.Next(), depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func celMapToJSON(m traits.Mapper, depth int) (any, error) {
	out := map[string]any{}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		ks, ok := k.(types.String)
		if !ok {
			return nil, fmt.Errorf("map key of CEL type %s cannot be a JSON key", k.Type().TypeName())
		}
		e, err := celToJSON(m.Get(k), depth+1)
		if err != nil {
			return nil, err
		}
		out[string(ks)] = e
	}
	return out, nil
}
