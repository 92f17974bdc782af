// Package events records Kubernetes Events the way every toolgate controller does: with the
// note bounded to what the events API accepts.
package events

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/toolgate/toolgate/pipeline"
)

// MaxNote is the events.k8s.io/v1 note limit (1 KiB): an event over it is refused.
const MaxNote = 1024

// Emit records an event with its note bounded to what the events API accepts (an event
// over the limit is refused and lost from the audit chain). A nil rec records nothing.
func Emit(rec recorder.EventRecorder, obj runtime.Object, eventType, reason, action, note string) {
	if rec == nil {
		return
	}
	bounded, _ := pipeline.Bounded(note, MaxNote)
	rec.Eventf(obj, nil, eventType, reason, action, "%s", bounded)
}
