package agentclient

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// cancelPatch sets spec.cancel; a merge patch, so it needs only the patch verb and names
// no resourceVersion (a cancel never conflicts with the operator's status writes).
var cancelPatch = client.RawPatch(types.MergePatchType, []byte(`{"spec":{"cancel":true}}`))

// Cancel asks the operator to stop the call (spec.cancel = true), as the Client's identity:
// the toolgate-cancel admission policy admits it for the call's requester or a user
// granted the verb "cancel" on toolcalls. The operator then deletes a running call's Job
// and ends the call Failed with an isError result, reason Cancelled; the ToolCall stays
// until retention removes it. Setting it on a call that already ended changes nothing. It
// returns the call as the API server stored it.
func (c *Client) Cancel(ctx context.Context, name string) (*v1alpha1.ToolCall, error) {
	call := &v1alpha1.ToolCall{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name}}
	if err := c.C.Patch(ctx, call, cancelPatch); err != nil {
		return nil, err
	}
	return call, nil
}

// Cancelled reports whether the call ended because it was cancelled.
func Cancelled(call *v1alpha1.ToolCall) bool {
	return Done(call) && call.Status.Result.Reason == v1alpha1.ReasonCancelled
}
