package agentclient

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// LabelCreatedBy marks calls created through this package with the client that made them
// ("toolgate-cli", "toolgate-mcp").
const LabelCreatedBy = v1alpha1.LabelCreatedBy

// CallRequest is what a caller asks for; the identity comes from the Client.
type CallRequest struct {
	Tool    string
	Scope   string
	Session string
	// Arguments is a JSON object; nil means {}.
	Arguments json.RawMessage
	// CreatedBy, when set, becomes the toolgate.dev/created-by label.
	CreatedBy string
	// Labels are more labels of the call (the gateway's arguments digest, to find a retry).
	Labels map[string]string
	// Traceparent, when a W3C traceparent value, becomes the toolgate.dev/traceparent
	// annotation: the operator's trace of the call joins the caller's trace.
	Traceparent string
}

// Create creates the ToolCall (named after the tool, with a random suffix) and returns it
// as the API server stored it.
func (c *Client) Create(ctx context.Context, req CallRequest) (*v1alpha1.ToolCall, error) {
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	call := &v1alpha1.ToolCall{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, GenerateName: generateName(req.Tool)},
		Spec: v1alpha1.ToolCallSpec{
			Tool:      req.Tool,
			Scope:     req.Scope,
			Session:   req.Session,
			Requester: c.Identity,
			Arguments: runtime.RawExtension{Raw: args},
		},
	}
	if req.CreatedBy != "" || len(req.Labels) > 0 {
		call.Labels = maps.Clone(req.Labels)
		if call.Labels == nil {
			call.Labels = map[string]string{}
		}
		if req.CreatedBy != "" {
			call.Labels[LabelCreatedBy] = req.CreatedBy
		}
	}
	if tp := ValidTraceparent(req.Traceparent); tp != "" {
		call.Annotations = map[string]string{v1alpha1.AnnotationTraceparent: tp}
	}
	if err := c.C.Create(ctx, call); err != nil {
		return nil, err
	}
	return call, nil
}

// generateName turns a tool name (letters, digits, '_' and '-') into a DNS-1123 prefix.
func generateName(tool string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(tool) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	if name == "" {
		name = "call"
	}
	return name + "-"
}

// Decide answers a call awaiting approval: it creates the ToolCallApproval built by
// NewApproval for the call the approver was shown (pass the call as read, not a name: the
// approval is bound to its uid and to its status.argumentsDigest).
func (c *Client) Decide(ctx context.Context, call *v1alpha1.ToolCall, decision v1alpha1.ApprovalDecision, reason string) (*v1alpha1.ToolCallApproval, error) {
	approval, err := NewApproval(call, decision, c.Identity, reason)
	if err != nil {
		return nil, err
	}
	if err := c.C.Create(ctx, approval); err != nil {
		return nil, err
	}
	return approval, nil
}

// NewApproval builds the answer of approver to call: named after the call, in its
// namespace, bound to the call's uid (spec.callUID) and to the arguments digest it shows
// (status.argumentsDigest; another digest would make the approval a refusal). It carries an
// ownerReference to the call, so that garbage collection deletes it with the call; it is
// neither the controller nor blocks the owner's deletion, so the approver needs no
// permission on the call beyond reading it.
func NewApproval(call *v1alpha1.ToolCall, decision v1alpha1.ApprovalDecision, approver, reason string) (*v1alpha1.ToolCallApproval, error) {
	switch {
	case call.UID == "":
		return nil, fmt.Errorf("call %s has no uid: answer a call as read from the API server", call.Name)
	case call.Status.ArgumentsDigest == "":
		return nil, fmt.Errorf("call %s has no arguments digest yet: it has not been admitted", call.Name)
	}
	return &v1alpha1.ToolCallApproval{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       call.Namespace,
			Name:            call.Name,
			OwnerReferences: []metav1.OwnerReference{ApprovalOwner(call)},
		},
		Spec: v1alpha1.ToolCallApprovalSpec{
			CallUID:         string(call.UID),
			Decision:        decision,
			ArgumentsDigest: call.Status.ArgumentsDigest,
			Approver:        approver,
			Reason:          reason,
		},
	}, nil
}

// ApprovalOwner is the ownerReference of an approval to the call it answers: garbage
// collection deletes the approval with its call (on a real cluster). It is not the
// controller and does not block the call's deletion: setting either would need more than
// the approver's read access to the call.
func ApprovalOwner(call *v1alpha1.ToolCall) metav1.OwnerReference {
	no := false
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "ToolCall", Name: call.Name, UID: call.UID,
		Controller: &no, BlockOwnerDeletion: &no,
	}
}
