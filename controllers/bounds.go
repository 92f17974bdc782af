package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/toolgate/toolgate/pipeline"
)

// Limits of the fields the operator writes, as the API server enforces them. A message over
// its field's limit would make the whole status write fail (and the call never end), or an
// event be dropped: every message is cut to fit, saying so. The result's own fields are
// fitted by stage 8 (pipeline.StoreResult).
const (
	// maxConditionMessage is metav1.Condition's message limit (maxLength 32768).
	maxConditionMessage = 32768
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
