package catalogue_test

import (
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	tg "github.com/toolgate/toolgate/pkg/toolgatetest"
)

// category groups the rows of the catalogue (docs/adversarial.md counts them).
type category string

const (
	catArguments category = "arguments"
	catSchemas   category = "schemas"
	catPolicies  category = "policies"
	catOutputs   category = "outputs"
	catImages    category = "images"
	catRegistry  category = "registry"
	catIdentity  category = "identity"
)

// row is one hostile input and the exact outcome it must have.
type row struct {
	// id is unique; it names the row's Tool (the model-facing name too) and its entry.
	id       string
	category category
	// hostile says, in one line, what is hostile about the input.
	hostile string

	// tool shapes the row's Tool (object and tool name = id, namespace layer, image
	// example/<id>:1); nil leaves it plain (any object, echo body).
	tool func(w *tg.ToolWrapper)
	// noTool creates no Tool for the row.
	noTool bool
	// objects are created as the admin before the call (policies, scopes, more tools).
	objects func(ns string) []client.Object
	// refusedObject is a hostile object the API server must refuse (want.objectRefused,
	// want.objectMessage) before the call is made.
	refusedObject func(ns string) client.Object
	// script is what the simulated kubelet makes of the row's Pods; zero: echo the arguments.
	script tg.Outcome

	// args is spec.arguments exactly as sent on the wire ("" sends {}); "-" leaves it out.
	args string
	// query is added to the create request (e.g. "fieldValidation=Strict").
	query string
	// callName is the call's metadata.name (default "c").
	callName string
	// callTool is spec.tool (default: id).
	callTool string
	scope    string
	// user creates the call ("" the admin; any other name is an editor of every
	// toolgate.dev resource); requester is spec.requester (default: that user).
	user, requester string
	// approval, for calls a policy parks, is written once the call awaits approval.
	approval *approval
	// advance steps the operator's clock once the call waits (for approval, or on a Pod
	// that never reports), and pokes the call until it is terminal.
	advance time.Duration

	want want
}

// approval is the answer a row writes for its parked call.
type approval struct {
	// user writes it; role is the shipped role bound to that user in the row's namespace
	// (default ApproverRole); editor makes the user an editor of everything instead.
	user   string
	role   tg.UserRole
	editor bool
	// approver is spec.approver (default user).
	approver string
	// callUID is spec.callUID (default: the call's uid).
	callUID string
	// digest is spec.argumentsDigest (default: the call's).
	digest string
	// ownerName names another call in the approval's ownerReference.
	ownerName string
	// replay: the approval answered (and ran) an earlier call of the same name, deleted
	// and created again with the same arguments; it is left in place for the new one.
	replay bool
}

// want is a row's exact expected outcome: refused at admission, or a terminal phase.
type want struct {
	// refused is the API server's status reason for the call's create; message is then a
	// regexp its error matches, and no call exists.
	refused metav1.StatusReason

	// phase, reason (result.reason) and message (a regexp result.error matches) of the
	// terminal call; every phase but Succeeded carries an isError result.
	phase   v1alpha1.ToolCallPhase
	reason  string
	message string
	// content is the exact JSON result content of a Succeeded call (MatchJSON), if set.
	content string

	// objectRefused / objectMessage: the API server refuses row.refusedObject.
	objectRefused metav1.StatusReason
	objectMessage string

	// approvalRefused / approvalMessage: the API server refuses the approval's create.
	approvalRefused metav1.StatusReason
	approvalMessage string
	// consumed is the approval's Consumed reason (True for Applied, False for every refusal).
	consumed string

	// check makes row-specific assertions on the terminal call.
	check func(g Gomega, call *v1alpha1.ToolCall)
}

// toolName is the row's model-facing tool name (and object name).
func (r row) toolName() string { return r.id }

func (r row) name() string {
	if r.callName != "" {
		return r.callName
	}
	return "c"
}

func (r row) calledTool() string {
	if r.callTool != "" {
		return r.callTool
	}
	return r.toolName()
}

func (r row) caller() string {
	if r.user != "" {
		return r.user
	}
	return tg.AdminUser
}

func (r row) spec() string {
	if r.requester != "" {
		return r.requester
	}
	return r.caller()
}
