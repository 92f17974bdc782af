package console

import (
	"bytes"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/catalog"
)

// card is a call as the console shows it: the Tool's present_call rendering (its
// spec.presentation.call, over the call as admitted) and what an approver answers for.
type card struct {
	Namespace, Name, UID string
	// Present is the rendered presentation ("" without one); PresentError why it failed.
	Present, PresentError           string
	Tool, Requester, Session, Phase string
	// Asked is why a policy asks for approval.
	Asked  string
	Digest string
	// Arguments are the canonical JSON of the call's arguments, whose digest (Digest) an
	// answer carries: the bytes the tool receives. ArgumentsError says what is wrong with
	// them: they do not freeze (shown as written), or their digest is not Digest (an
	// answer is refused).
	Arguments, ArgumentsError string
	// Deadline is the approval deadline (RFC 3339, "" without one); Left the time to it.
	Deadline, Left string
	// Awaiting: the call awaits an answer. Self: the signed-in user requested it, and so
	// may not approve it.
	Awaiting, Self bool
}

func newCard(call *v1alpha1.ToolCall, identity string, now time.Time) card {
	c := card{
		Namespace: call.Namespace, Name: call.Name, UID: string(call.UID),
		Tool: call.Spec.Tool, Requester: call.Spec.Requester, Session: call.Spec.Session,
		Phase: phaseOf(call), Digest: call.Status.ArgumentsDigest,
		Awaiting: call.Status.Phase == v1alpha1.PhaseAwaitingApproval, Self: call.Spec.Requester == identity,
	}
	frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{})
	switch {
	case err != nil:
		c.Arguments, c.ArgumentsError = string(call.Spec.Arguments.Raw), "not canonical JSON: "+err.Error()
	case frozen.Digest() != c.Digest:
		c.Arguments, c.ArgumentsError = frozen.String(), "canonical JSON whose digest is "+frozen.Digest()+", not the call's: an answer is refused"
	default:
		c.Arguments = frozen.String()
	}
	if cond := meta.FindStatusCondition(call.Status.Conditions, v1alpha1.ConditionAdmitted); cond != nil {
		c.Asked = cond.Message
	}
	if d := call.Status.ApprovalDeadline; d != nil {
		c.Deadline = d.UTC().Format(time.RFC3339)
		c.Left = left(d.Sub(now))
	}
	if p := presentation(call); p != nil && p.Call != "" {
		if frozen == nil {
			c.PresentError = c.ArgumentsError
		} else if c.Present, err = pipeline.DefaultCompiler().PresentCall(p.Call, catalog.CallInput(call, frozen)); err != nil {
			c.PresentError = err.Error()
		}
	}
	return c
}

// resultCard is a frozen result with the Tool's present_result rendering.
type resultCard struct {
	Present, PresentError string
	OK, IsError           bool
	Reason, Error, Digest string
	Content               string
	Meta                  map[string]string
}

func newResultCard(call *v1alpha1.ToolCall) *resultCard {
	r := call.Status.Result
	if r == nil {
		return nil
	}
	rc := &resultCard{OK: r.OK, IsError: r.IsError, Reason: r.Reason, Error: r.Error,
		Digest: call.Status.ResultDigest, Meta: r.Meta}
	var content any
	if r.Content != nil {
		rc.Content = indentJSON(r.Content.Raw)
		dec := json.NewDecoder(bytes.NewReader(r.Content.Raw))
		dec.UseNumber()
		_ = dec.Decode(&content) // stored by the API server: valid JSON
	}
	if p := presentation(call); p != nil && p.Result != "" {
		frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{})
		if err == nil {
			rc.Present, err = pipeline.DefaultCompiler().PresentResult(p.Result, catalog.CallInput(call, frozen),
				pipeline.Result{OK: r.OK, IsError: r.IsError, Content: content, Error: r.Error, Reason: pipeline.Reason(r.Reason), Meta: r.Meta})
		}
		if err != nil {
			rc.PresentError = err.Error()
		}
	}
	return rc
}

// presentation is the Tool's presentation as the call was admitted with it.
func presentation(call *v1alpha1.ToolCall) *v1alpha1.Presentation {
	if t := call.Status.Tool; t != nil && t.Spec != nil {
		return t.Spec.Presentation
	}
	return nil
}

func phaseOf(call *v1alpha1.ToolCall) string {
	if call.Status.Phase == "" {
		return string(v1alpha1.PhasePending)
	}
	return string(call.Status.Phase)
}

// indentJSON is raw indented, or raw as it is when it is not JSON.
func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// left renders the time to a deadline to the second; past is "passed".
func left(d time.Duration) string {
	if d <= 0 {
		return "passed"
	}
	return d.Round(time.Second).String()
}
