package pipeline

import (
	"errors"
	"strings"
	"testing"
)

func TestCompileSchemaRefusesReferenceCycles(t *testing.T) {
	cycles := map[string]string{
		"self":          `{"$ref":"#"}`,
		"two defs":      `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`,
		"through allOf": `{"$defs":{"a":{"allOf":[{"type":"object"},{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`,
		"through if":    `{"properties":{"deep":{"properties":{"x":{"if":{"$ref":"#/properties/deep/properties/x"}}}}}}`,
	}
	for name, doc := range cycles {
		t.Run(name, func(t *testing.T) {
			_, err := compileSchema([]byte(doc))
			var se *SchemaError
			if !errors.As(err, &se) || !strings.Contains(se.Msg, "reference cycle") {
				t.Fatalf("got %v, want a reference cycle SchemaError", err)
			}
		})
	}
	// Recursion through properties consumes the value: a linked list is a fine schema.
	list := `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}}}`
	if _, err := compileSchema([]byte(list)); err != nil {
		t.Fatalf("linked list: %v", err)
	}
}
