package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/pipeline"
)

// Limits of the fields the operator writes, as the API server enforces them. A message over
// its field's limit would make the whole status write fail (and the call never end), or an
// event be dropped: every message is cut to fit, saying so. The result's own fields are
// fitted by stage 8 (pipeline.StoreResult).
const (
	// maxConditionMessage is metav1.Condition's message limit (maxLength 32768).
	maxConditionMessage = 32768
	// maxEventNote is the events.k8s.io/v1 note limit (1 KiB).
	maxEventNote = 1024
	// maxDetail bounds the infrastructure's own words quoted in a condition (Outcome.Detail).
	maxDetail = 256
)

// boundedText is s cut to at most limit bytes, saying so (pipeline.Bounded, the one cut).
func boundedText(s string, limit int) string {
	out, _ := pipeline.Bounded(s, limit)
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
