package toolcall

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/registration"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// postExecute applies the PostExecute policies and the tool's output schema to res, with
// the same tool and call admission saw (catalog.CallInput over the snapshot) and policies
// read after the call was created, as admission's are (policies). It fails closed: policies that cannot be read are an
// error (the pass is retried by the controller's rate limiter) until postExecuteDeadline,
// then the result is withheld as PolicyError; arguments that no longer freeze to the
// admitted digest withhold it as PolicyError, an output schema that does not compile as
// OutputSchemaInvalid.
func (rv *resultReview) postExecute(ctx context.Context, call *v1alpha1.ToolCall, res pipeline.Result) (pipeline.Result, pipeline.Decision, error) {
	r := rv.r
	frozen, err := rv.frozenArguments(call)
	if err != nil {
		final, d := pipeline.Withhold(res, pipeline.ReasonPolicyError,
			"the PostExecute policies could not be evaluated: the admitted arguments could not be reproduced: "+err.Error())
		return final, d, nil
	}
	output, schemaErr := registration.CompileSchema(r.Compiler, registration.RawOf(call.Status.Tool.Spec.Output))
	reg, err := rv.policies(ctx, call)
	if err != nil {
		deadline := rv.postExecuteDeadline(call)
		if r.Clock.Now().Before(deadline) {
			return res, pipeline.Decision{}, err
		}
		final, d := pipeline.Withhold(res, pipeline.ReasonPolicyError,
			"the PostExecute policies could not be read by "+deadline.UTC().Format(time.RFC3339)+": "+err.Error())
		return final, d, nil
	}
	final, d := pipeline.PostExecute(r.Compiler.CompilePolicies(reg.policies), catalog.CallInput(call, frozen), res, output)
	if schemaErr != nil && !final.IsError {
		final, d = pipeline.Withhold(final, pipeline.ReasonOutputSchemaInvalid,
			"the tool's output schema does not compile: "+schemaErr.Error())
	}
	return final, d, nil
}

// policies are the namespace's registrations for call's review: admission's read when the
// result came back within reviewReuse of it (registry_held.go), a live read otherwise.
func (rv *resultReview) policies(ctx context.Context, call *v1alpha1.ToolCall) (*registry, error) {
	r := rv.r
	if reg, ok := r.admission.held.take(call, r.Clock.Now()); ok {
		return reg, nil
	}
	return r.admission.liveRegistry(ctx, call.Namespace)
}

// policiesUnavailable records, once, that the result waits for the PostExecute policies
// (ResultAccepted=Unknown, and the attempt's completion time the deadline counts from),
// then returns err so that the controller retries the pass with its rate limiter.
func (rv *resultReview) policiesUnavailable(ctx context.Context, call *v1alpha1.ToolCall, err error) (ctrl.Result, error) {
	r := rv.r
	if c := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionResultAccepted); c == nil || c.Reason != v1alpha1.ReasonPolicyUnavailable {
		r.setCondition(call, v1alpha1.ConditionResultAccepted, metav1.ConditionUnknown, v1alpha1.ReasonPolicyUnavailable,
			"the PostExecute policies could not be read ("+err.Error()+"); retrying until "+
				rv.postExecuteDeadline(call).UTC().Format(time.RFC3339)+", then the result is withheld")
		if werr := r.status.writeStatus(ctx, call); werr != nil {
			return ctrl.Result{}, errors.Join(err, werr)
		}
	}
	ctrl.LoggerFrom(ctx).Info("PostExecute policies could not be read; retrying", "error", err.Error())
	return ctrl.Result{}, fmt.Errorf("reading PostExecute policies: %w", err)
}

// postExecuteDeadline is when a result whose PostExecute policies cannot be read is
// withheld: DeadlineGrace after the attempt's end was first seen, and never before the
// attempt's own deadline (the call ends by the time it would have timed out anyway).
func (rv *resultReview) postExecuteDeadline(call *v1alpha1.ToolCall) time.Time {
	r := rv.r
	deadline := r.attemptDeadline(call)
	if n := len(call.Status.Attempts); n > 0 && call.Status.Attempts[n-1].CompletionTime != nil {
		if end := call.Status.Attempts[n-1].CompletionTime.Add(r.Options.DeadlineGrace); end.After(deadline) {
			deadline = end
		}
	}
	return deadline
}

// frozenArguments are the arguments admission froze: the canonical bytes under the digest
// recorded in status, carried rather than frozen again (controllers/frozenargs).
func (rv *resultReview) frozenArguments(call *v1alpha1.ToolCall) (*pipeline.Frozen, error) {
	r := rv.r
	return r.frozen.Get(call, r.Options.MaxArgumentBytes)
}
