package toolcall

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/pipeline"
)

// The result the model sees of arguments over the operator's limit names their size, never
// the limit (--max-argument-bytes is host configuration, DESIGN rule 4); the condition's
// message (the decision's) keeps it for the operator's people.
func TestRefusalKeepsTheArgumentLimitFromTheModel(t *testing.T) {
	adm := pipeline.Admit(pipeline.AdmitInput{Arguments: []byte(`{"a":"` + strings.Repeat("x", 5000) + `"}`),
		Freeze: pipeline.FreezeOptions{MaxBytes: 4321}})
	if !strings.Contains(adm.Final.Message, "4321") {
		t.Fatalf("the condition's message %q does not name the limit", adm.Final.Message)
	}
	res := refusal(adm.Final)
	if !res.IsError || res.Reason != pipeline.ReasonArgumentsTooLarge {
		t.Fatalf("refusal = %+v, want an isError ArgumentsTooLarge result", res)
	}
	if want := "arguments are 5008 bytes, over the size limit for tool calls"; res.Error != want || res.Content != want {
		t.Errorf("result error %q, content %v; want %q", res.Error, res.Content, want)
	}
}
