// Package startgate decides whether an attempt's Job waits, created suspended, before it
// starts (issue 34, docs/bursts.md): behind a Kueue LocalQueue, where the platform runs
// Kueue, or behind the operator's own bound on concurrent starts. A burst then queues
// instead of starting every sandbox at once and running out the tools' timeouts while the
// node creates them. Everything it decides from is on the Job (labels, an annotation,
// spec.suspend) and in the cache: a restart loses nothing.
package startgate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/registration"
	"github.com/toolgate/toolgate/internal/podspec"
)

// Options are the operator-wide settings of admission (the manager's flags).
type Options struct {
	// Queue is the Kueue LocalQueue (in each call's namespace) of calls whose scope chain
	// declares none (--admission-queue); empty: no Kueue.
	Queue string
	// MaxWait bounds how long an attempt waits for admission when its scope chain sets no
	// admission.maxWait (--admission-max-wait); past it the call ends NotAdmitted.
	MaxWait time.Duration
	// MaxConcurrentStarts, when positive, bounds how many Jobs the operator lets start at
	// once when no Kueue queue applies (--max-concurrent-starts); 0: unbounded.
	MaxConcurrentStarts int
}

// DefaultMaxWait is the default bound of a wait for admission.
const DefaultMaxWait = 10 * time.Minute

// DefaultOptions: no Kueue, no start bound, a 10-minute bound on waits.
func DefaultOptions() Options { return Options{MaxWait: DefaultMaxWait} }

// Validate refuses settings the operator could not apply: a queue name that is no label
// value of a LocalQueue, a wait outside the API's 1s..24h, a negative bound.
func (o Options) Validate() error {
	var errs []error
	if o.Queue != "" {
		if msgs := validation.IsDNS1123Label(o.Queue); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--admission-queue %q is no LocalQueue name: %v", o.Queue, msgs))
		}
	}
	if o.MaxWait < time.Second || o.MaxWait > 24*time.Hour {
		errs = append(errs, fmt.Errorf("--admission-max-wait %s must be between 1s and 24h (as ToolScope admission.maxWait)", o.MaxWait))
	}
	if o.MaxConcurrentStarts < 0 {
		errs = append(errs, fmt.Errorf("--max-concurrent-starts %d is negative (0: unbounded)", o.MaxConcurrentStarts))
	}
	return errors.Join(errs...)
}

// Resolve is the admission the call's next Job is created behind; nil: none, it starts at
// once. The nearest scope on the call's chain (its own first, then its parents) that
// declares admission gives the queue and the bound, each falling back to the operator's;
// with no queue at all, the operator's start bound applies when it is set.
func Resolve(ctx context.Context, c client.Reader, call *v1alpha1.ToolCall, o Options) (*podspec.Admission, error) {
	decl, err := declaration(ctx, c, call)
	if err != nil {
		return nil, err
	}
	a := podspec.Admission{Queue: o.Queue, MaxWait: o.MaxWait}
	if decl != nil {
		if decl.QueueName != "" {
			a.Queue = decl.QueueName
		}
		if decl.MaxWait != nil && decl.MaxWait.Duration > 0 {
			a.MaxWait = decl.MaxWait.Duration
		}
	}
	if a.MaxWait <= 0 {
		a.MaxWait = DefaultMaxWait
	}
	if a.Queue == "" && o.MaxConcurrentStarts <= 0 {
		return nil, nil
	}
	return &a, nil
}

// declaration is the nearest admission declaration on the call's chain; nil: none (or the
// call is made in the namespace layer, which declares none).
func declaration(ctx context.Context, c client.Reader, call *v1alpha1.ToolCall) (*v1alpha1.Admission, error) {
	scope, err := registration.NearestScope(ctx, c, call.Namespace, call.Spec.Scope,
		func(s *v1alpha1.ToolScope) bool { return s.Spec.Admission != nil })
	if scope == nil || err != nil {
		return nil, err
	}
	return scope.Spec.Admission, nil
}

// WaitBound is when an attempt that started at start and waits behind a stops waiting:
// past it, never admitted, the call ends NotAdmitted.
func WaitBound(start time.Time, a podspec.Admission) time.Time {
	wait := a.MaxWait
	if wait <= 0 {
		wait = DefaultMaxWait
	}
	return start.Add(wait)
}

// Describe is the Executed condition's message of an attempt waiting behind a: stable while
// it waits (a changing position would rewrite the status at every pass of a burst).
func Describe(a podspec.Admission, maxStarts int) string {
	if a.Queue != "" {
		return fmt.Sprintf("waiting for Kueue LocalQueue %s to admit the Job (at most %s; the tool's timeout starts at admission)", a.Queue, a.MaxWait)
	}
	return fmt.Sprintf("waiting for one of the operator's %d start slots (at most %s; the tool's timeout starts at admission)", maxStarts, a.MaxWait)
}

// NotAdmittedMessage is what the model reads of a call whose Job waited past its bound.
func NotAdmittedMessage(wait time.Duration) string {
	return fmt.Sprintf("the tool call waited longer than %s for capacity and was not run", wait)
}
