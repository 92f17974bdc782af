// Package bounds fits what the reconcilers write into a status to the limits the API server
// enforces, saying when a text was cut (events are bounded by controllers/internal/events).
package bounds

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/pipeline"
)

// Limits of the fields the operator writes, as the API server enforces them. A message over
// its field's limit would make the whole status write fail (and the call never end): every
// message is cut to fit, saying so. The result's own fields are fitted by stage 8
// (pipeline.StoreResult).
const (
	// MaxConditionMessage is metav1.Condition's message limit (maxLength 32768).
	MaxConditionMessage = 32768
	// MaxDetail bounds the infrastructure's own words quoted in a condition (Outcome.Detail).
	MaxDetail = 256
)

// Text is s cut to at most limit bytes, saying so (pipeline.Bounded, the one cut).
func Text(s string, limit int) string {
	out, _ := pipeline.Bounded(s, limit)
	return out
}

// SetStatusCondition is meta.SetStatusCondition with the message bounded to its field.
func SetStatusCondition(conds *[]metav1.Condition, c metav1.Condition) bool {
	c.Message = Text(c.Message, MaxConditionMessage)
	return meta.SetStatusCondition(conds, c)
}
