package jobexec

import (
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// MaxCreateRefusals is how many times an attempt's Job create may be refused before the
// call ends ExecutionRejected. The retries go through the controller's rate limiter
// (exponential from 5 ms), so ten refusals span about five seconds; the attempt's deadline
// (timeout + grace) ends it sooner when it comes first.
const MaxCreateRefusals = 10

// refusals counts the refused Job creates of each call's current attempt, in memory: a
// restart starts counting again, and the attempt's deadline still bounds the whole.
type refusals struct {
	mu    sync.Mutex
	calls map[types.NamespacedName]refusalCount
}

type refusalCount struct {
	uid     types.UID
	attempt int32
	n       int
	last    error
}

// add counts one refusal of the call's attempt and returns how many there were.
func (f *refusals) add(call *v1alpha1.ToolCall, attempt int32, err error) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[types.NamespacedName]refusalCount{}
	}
	key := types.NamespacedName{Namespace: call.Namespace, Name: call.Name}
	c := f.calls[key]
	if c.uid != call.UID || c.attempt != attempt {
		c = refusalCount{uid: call.UID, attempt: attempt}
	}
	c.n++
	c.last = err
	f.calls[key] = c
	return c.n
}

// last is the latest refusal of the call's attempt, nil when there was none.
func (f *refusals) last(call *v1alpha1.ToolCall, attempt int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.calls[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}]
	if !ok || c.uid != call.UID || c.attempt != attempt {
		return nil
	}
	return c.last
}

// forget drops the count of a call whose Job exists, that ended or that is gone.
func (f *refusals) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.calls, key)
}

// persistentCreateError reports a create the API server will refuse whatever the retry:
// the object itself is wrong.
func persistentCreateError(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsNotAcceptable(err) || apierrors.IsUnsupportedMediaType(err)
}
