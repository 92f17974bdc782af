package toolcall

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/controllers/internal/bounds"
	"github.com/toolgate/toolgate/internal/notify"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/approvalevents"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// maxFallbackCardArguments bounds the canonical arguments in a card of a tool without a
// presentation.call expression.
const maxFallbackCardArguments = 1 << 10

// notifyRequested queues the Requested event of a parked call, once per process: after the
// write that parked it, or — for a call that parked before this operator started — at its
// first reconcile here (at-least-once across restarts; receivers drop repeats by id).
// It costs no API write, and nothing at all for calls that never ask.
func (n *approvalNotifier) notifyRequested(ctx context.Context, call *v1alpha1.ToolCall) {
	r := n.r
	if r.Notifier == nil || !r.Notifier.FirstRequest(client.ObjectKeyFromObject(call), call.UID) {
		return
	}
	at := r.Clock.Now()
	if call.Status.AdmittedTime != nil {
		at = call.Status.AdmittedTime.Time
	}
	r.Notifier.Notify(ctx, notify.Event{Kind: v1alpha1.ApprovalEventRequested, Scope: call.Spec.Scope, At: at, Data: n.approvalData(call)})
}

// notifyDecided queues the event of a parked call's answer, after the status write that
// recorded it: Expired for ApprovalTimeout, Denied for any other ending (the result's reason
// says which: ApprovalDenied, ApprovalDigestMismatch, …), Approved when it goes on.
func (n *approvalNotifier) notifyDecided(ctx context.Context, call *v1alpha1.ToolCall) {
	r := n.r
	if r.Notifier == nil {
		return
	}
	r.Notifier.Forget(client.ObjectKeyFromObject(call))
	now := r.Clock.Now()
	data := n.approvalData(call)
	data.DecidedAt, data.Approver = &now, call.Status.Approver
	kind := v1alpha1.ApprovalEventApproved
	data.Reason = v1alpha1.ReasonApproved
	if res := call.Status.Result; res != nil {
		kind, data.Reason = v1alpha1.ApprovalEventDenied, res.Reason
		if res.Reason == string(pipeline.ReasonApprovalTimeout) {
			kind = v1alpha1.ApprovalEventExpired
		}
	}
	data.Decision = string(kind)
	r.Notifier.Notify(ctx, notify.Event{Kind: kind, Scope: call.Spec.Scope, At: now, Data: data})
}

// forgetNotified drops what the notifier remembers of a deleted call.
func (n *approvalNotifier) forgetNotified(key types.NamespacedName) {
	r := n.r
	if r.Notifier != nil {
		r.Notifier.Forget(key)
	}
}

// approvalData is what a person needs to decide: the call's card, tool, requester, digest,
// deadline and the reason it asks. The notifier adds the commands and the console link.
func (n *approvalNotifier) approvalData(call *v1alpha1.ToolCall) approvalevents.Data {
	in := catalog.CallInput(call, nil)
	d := approvalevents.Data{Namespace: call.Namespace, Name: call.Name, UID: string(call.UID),
		Tool: in.Tool.Name, Scope: call.Spec.Scope, Requester: call.Spec.Requester,
		ArgumentsDigest: call.Status.ArgumentsDigest}
	if d.Tool == "" {
		d.Tool = call.Spec.Tool
	}
	if call.Status.Tool != nil {
		d.ToolKind = string(call.Status.Tool.Kind)
	}
	if call.Status.ApprovalDeadline != nil {
		d.ApprovalDeadline = call.Status.ApprovalDeadline.UTC()
	}
	if c := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionAdmitted); c != nil {
		d.Message = c.Message
	}
	d.Card = n.card(call, in)
	return d
}

// card renders the call for people: the tool's presentation.call over the frozen arguments
// (what UIs show as present_call), else "<tool> <canonical arguments>" cut at 1 KiB.
func (n *approvalNotifier) card(call *v1alpha1.ToolCall, in pipeline.Input) string {
	r := n.r
	frozen, err := r.review.frozenArguments(call)
	if err != nil {
		return in.Tool.Name
	}
	in.Arguments = frozen
	if snap := call.Status.Tool; snap != nil && snap.Spec != nil && snap.Spec.Presentation != nil && snap.Spec.Presentation.Call != "" {
		if s, err := r.Compiler.PresentCall(snap.Spec.Presentation.Call, in); err == nil && s != "" {
			return s
		}
	}
	return in.Tool.Name + " " + bounds.Text(frozen.String(), maxFallbackCardArguments)
}
