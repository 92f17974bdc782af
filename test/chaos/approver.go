package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
	"github.com/toolgate/toolgate/test/chaos/check"
)

// approver answers parked calls as a person would (user "approver", through the identity
// admission policy): Approve or Deny as the call's script says, after a random pause of up
// to maxDelay, so answers land while the operator is down too. Unanswered calls are left
// to their window.
type approver struct {
	c        client.Client
	ctx      context.Context
	script   map[types.NamespacedName]check.Expectation
	maxDelay time.Duration

	mu       sync.Mutex
	rng      *rand.Rand
	answered map[types.UID]bool
	errs     []error
	wg       sync.WaitGroup
}

// onCall is the Recorder's hook: every ToolCall version passes here.
func (a *approver) onCall(v check.CallVersion) {
	call := v.Call
	if call.Status.Phase != v1alpha1.PhaseAwaitingApproval {
		return
	}
	exp := a.script[types.NamespacedName{Namespace: call.Namespace, Name: call.Name}]
	if exp.Approval != check.Approve && exp.Approval != check.Deny {
		return
	}
	a.mu.Lock()
	if a.answered[call.UID] {
		a.mu.Unlock()
		return
	}
	a.answered[call.UID] = true
	delay := time.Duration(a.rng.Int64N(int64(a.maxDelay) + 1))
	a.mu.Unlock()
	a.wg.Go(func() { a.answer(&call, exp.Approval, delay) })
}

// answer creates the approval, retrying while the API server is away.
func (a *approver) answer(call *v1alpha1.ToolCall, decision check.Approval, delay time.Duration) {
	select {
	case <-a.ctx.Done():
		return
	case <-time.After(delay):
	}
	w := tg.MakeToolCallApproval(call.Name, call.Namespace).For(call).Approver("approver").Reason("chaos harness")
	if decision == check.Deny {
		w.Deny()
	}
	for {
		err := a.c.Create(a.ctx, w.Obj())
		if err == nil || apierrors.IsAlreadyExists(err) {
			return
		}
		if a.ctx.Err() != nil || apierrors.IsForbidden(err) || apierrors.IsInvalid(err) {
			a.mu.Lock()
			a.errs = append(a.errs, err)
			a.mu.Unlock()
			return
		}
		time.Sleep(check.Retry)
	}
}
