package v1alpha1

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestSpecImmutabilityCoversEveryField keeps the ToolCall spec immutable but for cancel:
// CEL cannot compare "the spec but cancel" within its cost budget, so every other field has
// a rule "self == oldSelf" of its own (evaluated when old and new both have the field), and
// the spec's rule keeps each optional field from being added or removed. A field added to
// ToolCallSpec without both would be mutable after create.
func TestSpecImmutabilityCoversEveryField(t *testing.T) {
	data, err := os.ReadFile("toolcall_types.go")
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	m := regexp.MustCompile(`XValidation:rule="(has\(self\.scope\)[^"]*)",message="spec is immutable`).FindStringSubmatch(src)
	if m == nil {
		t.Fatal("no spec immutability rule in toolcall_types.go")
	}
	specRule := m[1]
	_, body, found := strings.Cut(src, "type ToolCallSpec struct {")
	if body, _, _ = strings.Cut(body, "\n}\n"); !found {
		t.Fatal("no ToolCallSpec in toolcall_types.go")
	}
	typ := reflect.TypeFor[ToolCallSpec]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		// The field's markers: the comment lines right above its declaration.
		decl := strings.Index(body, "\n\t"+f.Name+" ")
		if decl < 0 {
			t.Fatalf("no declaration of %s", f.Name)
		}
		markers := body[strings.LastIndex(body[:decl], "\n\n")+1 : decl]
		fieldRule := strings.Contains(markers, `rule="self == oldSelf",message="spec is immutable`)
		if name == "cancel" {
			if fieldRule || strings.Contains(specRule, "cancel") {
				t.Error("spec.cancel must stay settable")
			}
			continue
		}
		if !fieldRule {
			t.Errorf("spec.%s has no rule \"self == oldSelf\"", name)
		}
		if strings.Contains(opts, "omitempty") && !strings.Contains(specRule, "has(self."+name+") == has(oldSelf."+name+")") {
			t.Errorf("spec.%s is optional: the spec's rule must keep it from being added or removed: %s", name, specRule)
		}
	}
}
