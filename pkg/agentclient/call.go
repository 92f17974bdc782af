package agentclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

// LabelCreatedBy marks calls created through this package with the client that made them
// ("toolgate-cli", "toolgate-mcp").
const LabelCreatedBy = "toolgate.dev/created-by"

// CallRequest is what a caller asks for; the identity comes from the Client.
type CallRequest struct {
	Tool    string
	Scope   string
	Session string
	// Arguments is a JSON object; nil means {}.
	Arguments json.RawMessage
	// CreatedBy, when set, becomes the toolgate.dev/created-by label.
	CreatedBy string
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
	if req.CreatedBy != "" {
		call.Labels = map[string]string{LabelCreatedBy: req.CreatedBy}
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

// Decide answers a call awaiting approval: it creates the ToolCallApproval (named after
// the call) binding decision to digest, the arguments digest the approver was shown. Pass
// the call's status.argumentsDigest; a different one makes the approval a refusal.
func (c *Client) Decide(ctx context.Context, callName string, decision v1alpha1.ApprovalDecision, digest, reason string) (*v1alpha1.ToolCallApproval, error) {
	if digest == "" {
		return nil, fmt.Errorf("call %s has no arguments digest yet: it has not been admitted", callName)
	}
	approval := &v1alpha1.ToolCallApproval{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: callName},
		Spec: v1alpha1.ToolCallApprovalSpec{
			Decision:        decision,
			ArgumentsDigest: digest,
			Approver:        c.Identity,
			Reason:          reason,
		},
	}
	if err := c.C.Create(ctx, approval); err != nil {
		return nil, err
	}
	return approval, nil
}
