package pipeline

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// refCycle finds a loop of in-place applicators — $ref, allOf, anyOf, oneOf, not,
// if/then/else, dependentSchemas: subschemas applied to the same value — such as
// {"$ref": "#"}. The validator would follow it for ever on any value that reaches it, and
// reports it only while validating, as a violation by the arguments; a schema with such a
// loop is invalid instead. It returns the location of a schema on the loop, or "".
func refCycle(root *jsonschema.Schema) string {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[*jsonschema.Schema]int{}
	var loop string
	var visit func(s *jsonschema.Schema) bool
	visit = func(s *jsonschema.Schema) bool {
		switch state[s] {
		case onPath:
			loop = s.Location
			return true
		case done:
			return false
		}
		state[s] = onPath
		for _, next := range inPlace(s) {
			if visit(next) {
				return true
			}
		}
		state[s] = done
		return false
	}
	seen := map[*jsonschema.Schema]bool{root: true}
	for queue := []*jsonschema.Schema{root}; len(queue) > 0; queue = queue[1:] {
		s := queue[0]
		if visit(s) {
			return strings.TrimPrefix(loop, schemaURL)
		}
		for _, next := range append(inPlace(s), nested(s)...) {
			if !seen[next] {
				seen[next] = true
				queue = append(queue, next)
			}
		}
	}
	return ""
}

// inPlace lists the subschemas s applies to the value s itself validates.
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	out := append([]*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}, s.AllOf...)
	out = append(append(out, s.AnyOf...), s.OneOf...)
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	for _, d := range s.DependentSchemas {
		out = append(out, d)
	}
	for _, d := range s.Dependencies {
		if d, ok := d.(*jsonschema.Schema); ok {
			out = append(out, d)
		}
	}
	return nonNil(out)
}

// nested lists the subschemas s applies to the members or items of its value.
func nested(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	for _, p := range s.Properties {
		out = append(out, p)
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	out = append(out, s.PrefixItems...)
	for _, v := range []any{s.AdditionalProperties, s.AdditionalItems, s.Items} {
		switch t := v.(type) {
		case *jsonschema.Schema:
			out = append(out, t)
		case []*jsonschema.Schema:
			out = append(out, t...)
		}
	}
	return nonNil(out)
}

func nonNil(in []*jsonschema.Schema) []*jsonschema.Schema {
	out := in[:0]
	for _, s := range in {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}
