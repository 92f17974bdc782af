package controllers

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/pipeline"
)

// Limits of the fields the operator writes, as the API server enforces them. A message over
// its field's limit would make the whole status write fail (and the call never end), or an
// event be dropped: every message is cut to fit, saying so.
const (
	// maxConditionMessage is metav1.Condition's message limit (maxLength 32768).
	maxConditionMessage = 32768
	// maxResultError is ToolResult.error's limit (maxLength 32768).
	maxResultError = 32768
	// maxEventNote is the events.k8s.io/v1 note limit (1 KiB).
	maxEventNote = 1024
)

// bounded cuts s to at most limit bytes (so at most limit characters, which is what
// maxLength counts), at a rune boundary, ending with a note that it was cut and how long it
// was. It reports whether it cut.
func bounded(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	note := fmt.Sprintf("… [truncated; %d bytes in full]", len(s))
	return strings.ToValidUTF8(pipeline.UTF8Prefix(s, limit-len(note)), "") + note, true
}

// boundedText is bounded without the report.
func boundedText(s string, limit int) string {
	out, _ := bounded(s, limit)
	return out
}

// setStatusCondition is meta.SetStatusCondition with the message bounded to its field.
func setStatusCondition(conds *[]metav1.Condition, c metav1.Condition) bool {
	c.Message = boundedText(c.Message, maxConditionMessage)
	return meta.SetStatusCondition(conds, c)
}

// emit records an event with its note bounded to what the events API accepts (an event
// over the limit is refused and lost from the audit chain).
func emit(rec recorder.EventRecorder, obj runtime.Object, eventType, reason, action, note string) {
	if rec == nil {
		return
	}
	rec.Eventf(obj, nil, eventType, reason, action, "%s", boundedText(note, maxEventNote))
}

// boundResult fits a result's error to its field. A refusal's content is the same message
// and is cut with it; meta.messageBytes gives the full size.
func boundResult(res pipeline.Result) pipeline.Result {
	msg, cut := bounded(res.Error, maxResultError)
	if !cut {
		return res
	}
	if content, ok := res.Content.(string); ok && content == res.Error {
		res.Content = msg
	}
	meta := maps.Clone(res.Meta)
	if meta == nil {
		meta = map[string]string{}
	}
	meta[pipeline.MetaMessageBytes] = strconv.Itoa(len(res.Error))
	res.Error, res.Meta = msg, meta
	return res
}
