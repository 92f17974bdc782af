package toolcall

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/executor"
	"github.com/toolgate/toolgate/controllers/feature"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/controllers/registration"
	"github.com/toolgate/toolgate/internal/metrics"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// admit runs the pure stages in one pass (subject check, resolution, freeze, validate,
// pre-execute, guards) and persists every verdict in one status write, before any side
// effect. Only after that write succeeded is the Job created.
func (ad *admitter) admit(ctx context.Context, call *v1alpha1.ToolCall) (ctrl.Result, error) {
	r := ad.r
	start := r.Clock.Now()
	// Admission reads the registrations and policies live, not from the informer cache:
	// a ToolPolicy, ToolScope or Tool created before the call governs it even when the
	// cache has not seen it yet (the API server answers such LISTs consistently). The
	// LISTs are shared with the calls that asked at the same time (liveRegistry). An
	// error requeues the call; nothing has been written yet. The NetworkPolicy read the
	// Job needs runs alongside (netisolation.Enforcer.WithRead).
	ctx = r.enforcer().WithRead(ctx, call.Namespace)
	reg, err := ad.liveRegistry(ctx, call.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	ad.held.put(call, reg, start) // for the result's review, if it comes back soon (registry_held.go)
	call.Status.ObservedGeneration = call.Generation
	r.issued.stamp(call)
	outcome := ad.runAdmission(reg, call)
	traceAdmission(ctx, start, outcome, r.Clock.Now())
	if outcome.verdict == pipeline.Allow {
		if err := r.scheduleOrQueue(ctx, call); err != nil {
			return ctrl.Result{}, err
		}
	}
	metrics.StageDuration.WithLabelValues("admit").Observe(r.Clock.Since(start).Seconds())
	if err := r.status.writeStatus(ctx, call); err != nil {
		return ctrl.Result{}, err
	}
	r.status.afterStatusWrite(call, outcome.events)
	if call.Status.Phase == v1alpha1.PhaseAwaitingApproval {
		r.notices.notifyRequested(ctx, call)
	}
	ctrl.LoggerFrom(ctx).Info("call admitted", "tool", call.Spec.Tool, "requester", call.Spec.Requester,
		"verdict", outcome.verdict, "reason", outcome.reason, "phase", call.Status.Phase, "argumentsDigest", call.Status.ArgumentsDigest)
	metrics.Verdicts.WithLabelValues(executor.MetricTool(call), string(outcome.verdict), string(outcome.reason)).Inc()
	switch call.Status.Phase {
	case v1alpha1.PhaseRunning:
		return r.execute(ctx, call)
	case v1alpha1.PhaseAwaitingApproval:
		return ctrl.Result{RequeueAfter: call.Status.ApprovalDeadline.Sub(r.Clock.Now())}, nil
	}
	return ctrl.Result{}, nil
}

// admission is what the pure pass decided, for metrics and events.
type admission struct {
	verdict pipeline.Verdict
	reason  pipeline.Reason
	events  []event
	// stages are the pure stages' decisions and times (tracing); zero when not reached.
	stages pipeline.Admission
}

// runAdmission mutates call.Status in memory only: conditions, digest, snapshot, phase.
func (ad *admitter) runAdmission(reg *registry, call *v1alpha1.ToolCall) admission {
	r := ad.r
	now := r.Clock.Now()
	if d := reg.index.SubjectGuard(call.Spec.Scope, call.Spec.Requester); d.Verdict == pipeline.Deny {
		r.setCondition(call, v1alpha1.ConditionResolved, metav1.ConditionFalse, string(d.Reason), d.Message)
		return ad.refuse(call, d, now)
	}
	tool, d := reg.resolve(call.Spec.Scope, call.Spec.Tool)
	if d.Verdict == pipeline.Deny {
		r.setCondition(call, v1alpha1.ConditionResolved, metav1.ConditionFalse, string(d.Reason), d.Message)
		return ad.refuse(call, d, now)
	}
	if d := r.features().Admit(feature.Admission{Index: reg.index, Call: call, Spec: tool.spec}); d.Verdict == pipeline.Deny {
		r.setCondition(call, v1alpha1.ConditionResolved, metav1.ConditionFalse, string(d.Reason), d.Message)
		return ad.refuse(call, d, now)
	}
	r.setCondition(call, v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonResolved,
		"resolved to "+string(tool.snapshot.Kind)+" "+tool.snapshot.Name)
	call.Status.Tool = tool.snapshot
	call.Status.CallLabels = maps.Clone(call.Labels)
	params, err := registration.CompileSchema(r.Compiler, registration.RawOf(tool.spec.Parameters))
	if err != nil {
		return ad.refuse(call, notReady("parameters", err), now)
	}
	// A result that could not be checked would be withheld: do not run the body for it.
	if _, err := registration.CompileSchema(r.Compiler, registration.RawOf(tool.spec.Output)); err != nil {
		return ad.refuse(call, notReady("output", err), now)
	}
	in := catalog.CallInput(call, nil)
	adm := pipeline.Admit(pipeline.AdmitInput{
		Arguments: call.Spec.Arguments.Raw,
		Freeze:    pipeline.FreezeOptions{MaxBytes: r.Options.MaxArgumentBytes},
		Schema:    params,
		Tool:      in.Tool,
		Call:      in.Call,
		Policies:  r.Compiler.CompilePolicies(reg.policies),
		Now:       r.Clock.Now,
	})
	out := ad.recordAdmission(call, tool, adm, reg.ruleMessage(adm.Final), now)
	out.stages = adm
	if adm.Frozen != nil && !call.Status.Phase.IsTerminal() {
		// Frozen once, here: the Job, post-execute and the approval card use these bytes.
		r.frozen.Put(call, adm.Frozen)
	}
	return out
}

// recordAdmission writes the stage verdicts of one pure pass into the status (in memory).
func (ad *admitter) recordAdmission(call *v1alpha1.ToolCall, tool *resolvedTool, adm pipeline.Admission, ruleMsg string, now time.Time) admission {
	if adm.Frozen != nil {
		call.Status.ArgumentsDigest = adm.Frozen.Digest()
	}
	ad.setStage(call, v1alpha1.ConditionArgumentsFrozen, adm.Freeze, v1alpha1.ReasonFrozen)
	if adm.Validate.Evaluated() {
		ad.setStage(call, v1alpha1.ConditionArgumentsValid, adm.Validate, v1alpha1.ReasonValid)
	}
	if adm.PreExecute.Evaluated() {
		ad.setStage(call, v1alpha1.ConditionAdmitted, adm.PreExecute, v1alpha1.ReasonPolicyAllowed)
	}
	if adm.Guard.Evaluated() {
		ad.setStage(call, v1alpha1.ConditionGuarded, adm.Guard, v1alpha1.ReasonPolicyAllowed)
	}
	final := adm.Final
	switch final.Verdict {
	case pipeline.Deny:
		if final.Policy != "" {
			// The model sees the rule's own message, never the policy's internals.
			final.Message = ruleMsg
		}
		var meta map[string]string
		if adm.Validate.Verdict == pipeline.Deny {
			// The message lists a few violations; the count is of all of them.
			meta = map[string]string{pipeline.MetaViolations: strconv.Itoa(len(adm.Validation.Violations) + adm.Validation.Omitted)}
		}
		return ad.refuseWith(call, final, meta, now)
	case pipeline.Ask:
		window := final.ApprovalWindow
		if window <= 0 && tool.spec.ApprovalWindow != nil {
			window = tool.spec.ApprovalWindow.Duration
		}
		deadline := metav1.NewTime(pipeline.Parked{ParkedAt: now, Window: window}.Deadline())
		call.Status.Phase = v1alpha1.PhaseAwaitingApproval
		call.Status.Verdict = v1alpha1.VerdictAsk
		call.Status.AdmittedTime = ptrTime(now)
		call.Status.ApprovalDeadline = &deadline
		return admission{verdict: pipeline.Ask, reason: final.Reason, events: []event{approvalRequested(call, final)}}
	}
	call.Status.Verdict = v1alpha1.VerdictAllow
	call.Status.AdmittedTime = ptrTime(now)
	return admission{verdict: pipeline.Allow, reason: final.Reason, events: []event{callAdmitted(call)}}
}

// refuse ends a call at admission: Denied for a decision against it (policy, guard,
// subject, approval), Failed for a call that cannot run (unknown tool, bad arguments).
func (ad *admitter) refuse(call *v1alpha1.ToolCall, d pipeline.Decision, now time.Time) admission {
	return ad.refuseWith(call, d, nil, now)
}

// refuseWith is refuse with facts for the result's meta.
func (ad *admitter) refuseWith(call *v1alpha1.ToolCall, d pipeline.Decision, meta map[string]string, now time.Time) admission {
	r := ad.r
	phase := v1alpha1.PhaseFailed
	if deniedReasons[d.Reason] {
		phase = v1alpha1.PhaseDenied
		call.Status.Verdict = v1alpha1.VerdictDeny
	}
	res := refusal(d)
	res.Meta = meta
	r.status.setTerminal(call, phase, res, now)
	return admission{verdict: pipeline.Deny, reason: d.Reason, events: terminalEvents(call)}
}

// deniedReasons are the refusals that are decisions against the call (phase Denied);
// every other refusal means the call could not run (phase Failed).
var deniedReasons = map[pipeline.Reason]bool{
	pipeline.ReasonPolicyDenied: true, pipeline.ReasonPolicyError: true, pipeline.ReasonGuardDenied: true,
	pipeline.ReasonNotASubject: true, pipeline.ReasonApprovalDenied: true,
	pipeline.ReasonApprovalDigestMismatch: true, pipeline.ReasonApprovalTimeout: true,
	pipeline.ReasonSelfApproval: true,
}

// notReady refuses a call whose tool's schema (which: parameters or output) does not compile.
func notReady(which string, err error) pipeline.Decision {
	msg := "the tool's registration is not ready: " + err.Error()
	var se *pipeline.SchemaError
	if errors.As(err, &se) {
		msg = "the tool's registration is not ready: its " + which + " schema is invalid"
	}
	return pipeline.Decision{Verdict: pipeline.Deny, Reason: pipeline.ReasonToolNotReady, Message: msg}
}

// setStage records one stage's decision as a condition: Allow is True, Ask Unknown, Deny False.
func (ad *admitter) setStage(call *v1alpha1.ToolCall, condType string, d pipeline.Decision, okReason string) {
	r := ad.r
	status, reason := metav1.ConditionTrue, okReason
	switch d.Verdict {
	case pipeline.Ask:
		status, reason = metav1.ConditionUnknown, string(d.Reason)
	case pipeline.Deny:
		status, reason = metav1.ConditionFalse, string(d.Reason)
	}
	msg := d.Message
	if msg == "" {
		msg = string(d.Reason)
	}
	r.setCondition(call, condType, status, reason, msg)
}

func (r *Reconciler) setCondition(call *v1alpha1.ToolCall, condType string, status metav1.ConditionStatus, reason, msg string) {
	bounds.SetStatusCondition(&call.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: call.Generation,
		LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
