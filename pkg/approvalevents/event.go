package approvalevents

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
)

// The CloudEvent types.
const (
	// TypeRequested: the call parked in AwaitingApproval and waits for a person.
	TypeRequested = "dev.toolgate.toolcall.approval.requested"
	// TypeApproved: an approval let the call go on (it is queued or running).
	TypeApproved = "dev.toolgate.toolcall.approval.approved"
	// TypeDenied: an approver denied the call (or approved other arguments): it ended Denied.
	TypeDenied = "dev.toolgate.toolcall.approval.denied"
	// TypeExpired: nobody answered before the approval deadline: it ended Denied
	// (ApprovalTimeout).
	TypeExpired = "dev.toolgate.toolcall.approval.expired"
)

// ContentType is the Content-Type of every request: CloudEvents' structured JSON mode.
const ContentType = event.ApplicationCloudEventsJSON + "; charset=utf-8"

// Data is the event's data: what a person needs to decide, and how to answer.
type Data struct {
	// Namespace, Name and UID identify the ToolCall.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// Tool is the tool's name as the model sees it; ToolKind (Tool or ClusterTool) and
	// Scope (the scope the call was made in, empty for the namespace layer) where it lives.
	Tool     string `json:"tool"`
	ToolKind string `json:"toolKind,omitempty"`
	Scope    string `json:"scope,omitempty"`
	// Requester is the authenticated user who made the call.
	Requester string `json:"requester"`
	// Card is the call as the tool presents it to people: its presentation.call expression
	// rendered over the frozen arguments, else the tool's name and its canonical arguments,
	// at most 4 KiB. Like Message and Requester it is one line as pkg/display shows it:
	// control, escape, bidi and zero-width characters arrive as visible escapes (\x1b,
	// \u202e, \n), so a receiver may show it as it is.
	Card string `json:"card"`
	// ArgumentsDigest is the sha256 of the canonical arguments, which an approval must carry.
	ArgumentsDigest string `json:"argumentsDigest"`
	// Message is why the call asks: the policy rule's message.
	Message string `json:"message,omitempty"`
	// ApprovalDeadline is when the call is denied unless answered.
	ApprovalDeadline time.Time `json:"approvalDeadline"`
	// ApproveCommand and DenyCommand answer the call from a terminal.
	ApproveCommand string `json:"approveCommand"`
	DenyCommand    string `json:"denyCommand"`
	// ConsoleURL is the call's page in the approval console, when the operator knows one.
	ConsoleURL string `json:"consoleURL,omitempty"`

	// Decision is set on the approved, denied and expired events: Approved, Denied or
	// Expired; Approver (who answered, absent for Expired), Reason (the call's result reason
	// for a denial: ApprovalDenied, ApprovalDigestMismatch, ApprovalTimeout; Approved for an
	// approval) and DecidedAt (when the operator recorded it) go with it.
	Decision  string     `json:"decision,omitempty"`
	Approver  string     `json:"approver,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
}

// Notification is a verified, decoded event.
type Notification struct {
	Event event.Event
	Data  Data
}

// Source is the CloudEvent source of a call's events: the ToolCall collection's API path.
func Source(namespace string) string {
	return "/apis/toolgate.dev/v1alpha1/namespaces/" + namespace + "/toolcalls"
}

// ID is the CloudEvent id of one event of a call: stable across retries and re-sends.
func ID(uid, eventType string) string {
	return uid + "." + eventType[len("dev.toolgate.toolcall.approval."):]
}

// Marshal builds the event of type eventType for d, at time at, as CloudEvents structured
// JSON: the exact bytes that are signed and sent.
func Marshal(eventType string, d Data, at time.Time) ([]byte, error) {
	e := event.New()
	e.SetID(ID(d.UID, eventType))
	e.SetSource(Source(d.Namespace))
	e.SetType(eventType)
	e.SetSubject(d.Namespace + "/" + d.Name)
	e.SetTime(at.UTC())
	if err := e.SetData(event.ApplicationJSON, d); err != nil {
		return nil, err
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return format.JSON.Marshal(&e)
}

// Decode parses a structured-mode CloudEvent and its Data.
func Decode(body []byte) (*Notification, error) {
	n := &Notification{}
	if err := format.JSON.Unmarshal(body, &n.Event); err != nil {
		return nil, fmt.Errorf("not a structured CloudEvent: %w", err)
	}
	if err := n.Event.Validate(); err != nil {
		return nil, fmt.Errorf("invalid CloudEvent: %w", err)
	}
	if err := json.Unmarshal(n.Event.Data(), &n.Data); err != nil {
		return nil, fmt.Errorf("event data: %w", err)
	}
	return n, nil
}
