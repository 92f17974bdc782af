package jobexec

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/callmemo"
)

// MaxCreateRefusals is how many times an attempt's Job create may be refused before the
// call ends ExecutionRejected. The retries go through the controller's rate limiter
// (exponential from 5 ms), so ten refusals span about five seconds; the attempt's deadline
// (timeout + grace) ends it sooner when it comes first.
const MaxCreateRefusals = 10

// refusals counts the refused Job creates of each call's current attempt, in memory: a
// restart starts counting again, and the attempt's deadline still bounds the whole.
type refusals struct {
	calls callmemo.Memo[refusalCount]
}

type refusalCount struct {
	attempt int32
	n       int
	last    error
}

// add counts one refusal of the call's attempt and returns how many there were.
func (f *refusals) add(call *v1alpha1.ToolCall, attempt int32, err error) int {
	return f.calls.Update(call, func(c refusalCount, ok bool) refusalCount {
		if !ok || c.attempt != attempt {
			c = refusalCount{attempt: attempt}
		}
		c.n++
		c.last = err
		return c
	}).n
}

// last is the latest refusal of the call's attempt, nil when there was none.
func (f *refusals) last(call *v1alpha1.ToolCall, attempt int32) error {
	c, ok := f.calls.Get(call)
	if !ok || c.attempt != attempt {
		return nil
	}
	return c.last
}

// forget drops the count of a call whose Job exists, that ended or that is gone.
func (f *refusals) forget(key types.NamespacedName) { f.calls.Forget(key) }

// persistentCreateError reports a create the API server will refuse whatever the retry:
// the object itself is wrong.
func persistentCreateError(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}
