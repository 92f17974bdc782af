package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
	"github.com/toolgate/toolgate/pipeline"
	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/display"
)

type decideOptions struct {
	f        *Factory
	decision v1alpha1.ApprovalDecision
	reason   string
	yes      bool
}

func newApproveCommand(f *Factory) *cobra.Command {
	return newDecideCommand(f, v1alpha1.DecisionApprove, "approve", "Approve a call awaiting approval: it then runs")
}

func newDenyCommand(f *Factory) *cobra.Command {
	return newDecideCommand(f, v1alpha1.DecisionDeny, "deny", "Deny a call awaiting approval: it ends Denied, without running")
}

func newDecideCommand(f *Factory, decision v1alpha1.ApprovalDecision, verb, short string) *cobra.Command {
	o := &decideOptions{f: f, decision: decision}
	cmd := &cobra.Command{
		Use:   verb + " CALL",
		Short: short,
		Long: short + `.

Shows the arguments — the canonical JSON whose digest the answer carries, first and in
full — then the call, tool, requester, session and why it asks (what the agent wrote is
shown escaped: control, escape, bidi and zero-width characters are visible as \x1b,
\u202e …), and asks for confirmation (unless --yes). The answer is a ToolCallApproval
named after the call, bound to the call (its uid, with an owner reference) and to the
arguments digest shown: one answer per call, and it cannot be changed.`,
		Example: fmt.Sprintf("  toolgate %s deploy-x7k2p --reason 'change ticket 4711'", verb),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&o.reason, "reason", "", "why, for the audit trail (at most 1024 characters)")
	cmd.Flags().BoolVarP(&o.yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func (o *decideOptions) run(ctx context.Context, name string) error {
	if len(o.reason) > 1024 {
		return Usagef("--reason is %d characters long; at most 1024", len(o.reason))
	}
	c, err := o.f.AgentClient(ctx)
	if err != nil {
		return err
	}
	call, err := c.Get(ctx, name)
	if err != nil {
		return explain(err, apiOp{verb: "get", resource: "toolcalls.toolgate.dev", namespace: c.Namespace})
	}
	if err := o.check(call, c.Identity); err != nil {
		return err
	}
	fprintf(o.f.IO.Out, "%s", formatApprovalRequest(call, time.Now()))
	if !o.yes {
		if err := o.confirm(); err != nil {
			return err
		}
	}
	return o.decide(ctx, c, call)
}

// check refuses what the operator would not apply — a call not waiting for an answer, an
// approval by the call's own requester (which would also take the one approval name) — and
// a digest that is not the one of the arguments the approver is shown.
func (o *decideOptions) check(call *v1alpha1.ToolCall, identity string) error {
	if !agentclient.AwaitingApproval(call) {
		return Exitf(ExitFailure, "call %s is not awaiting approval (phase %s): there is nothing to %s",
			call.Name, phaseOf(call), strings.ToLower(string(o.decision)))
	}
	if o.decision == v1alpha1.DecisionApprove && call.Spec.Requester == identity {
		return Exitf(ExitForbidden, "you (%s) requested call %s: someone else must approve it (toolgate refuses a self-approval)",
			identity, call.Name)
	}
	// The approver answers for the arguments shown, so the digest must be theirs.
	if frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{}); err == nil &&
		frozen.Digest() != call.Status.ArgumentsDigest {
		return Exitf(ExitFailure, "call %s: status.argumentsDigest %s is not the digest of its arguments (%s); not answering for arguments that cannot be shown",
			call.Name, call.Status.ArgumentsDigest, frozen.Digest())
	}
	return nil
}

// confirm asks "Approve? [y/N]" on the streams; anything but y or yes declines.
func (o *decideOptions) confirm() error {
	fprintf(o.f.IO.Out, "%s? [y/N] ", o.decision)
	answer, err := bufio.NewReader(o.f.IO.In).ReadString('\n')
	if err != nil && (err != io.EOF || answer == "") {
		fprintf(o.f.IO.Out, "\n")
		return Exitf(ExitFailure, "no answer on stdin: nothing was written (use --yes to answer without a prompt)")
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return Exitf(ExitFailure, "not confirmed: nothing was written")
}

func (o *decideOptions) decide(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall) error {
	if err := o.write(ctx, c, call); err != nil {
		return err
	}
	done := "Approved"
	if o.decision == v1alpha1.DecisionDeny {
		done = "Denied"
	}
	fprintf(o.f.IO.Out, "%s call %s as %s (ToolCallApproval %s/%s).\n", done, call.Name, display.Line(c.Identity), c.Namespace, call.Name)
	return nil
}

// write creates the ToolCallApproval, explaining a refusal.
func (o *decideOptions) write(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall) error {
	_, err := c.Decide(ctx, call, o.decision, o.reason)
	if apierrors.IsAlreadyExists(err) {
		return alreadyAnswered(ctx, c, call)
	}
	return explain(err, apiOp{verb: "create", resource: "toolcallapprovals.toolgate.dev", namespace: c.Namespace})
}

// alreadyAnswered explains why the approval name is taken: by an answer to this call (it
// cannot be changed), by one the operator refused (Consumed=False), or by one written for an
// earlier call of the same name (another uid). The last two do not count for this call: the
// approver deletes them and answers again.
func alreadyAnswered(ctx context.Context, c *agentclient.Client, call *v1alpha1.ToolCall) error {
	existing := &v1alpha1.ToolCallApproval{}
	if err := c.C.Get(ctx, client.ObjectKeyFromObject(call), existing); err == nil {
		deleteIt := fmt.Sprintf("delete it (kubectl -n %s delete toolcallapproval %s) and answer again", c.Namespace, call.Name)
		if existing.Spec.CallUID != string(call.UID) {
			return Exitf(ExitFailure, "ToolCallApproval %s/%s answers an earlier call of the same name (uid %s), not this one (uid %s), and does not count for it; %s",
				c.Namespace, call.Name, orNone(existing.Spec.CallUID), call.UID, deleteIt)
		}
		if cond := meta.FindStatusCondition(existing.Status.Conditions, v1alpha1.ConditionConsumed); cond != nil && cond.Status == metav1.ConditionFalse {
			return Exitf(ExitFailure, "ToolCallApproval %s/%s was refused (%s: %s); %s", c.Namespace, call.Name, cond.Reason, cond.Message, deleteIt)
		}
	}
	return Exitf(ExitFailure, "call %s already has an answer (ToolCallApproval %s); an answer cannot be changed", call.Name, call.Name)
}

// formatApprovalRequest is what an approver is shown before answering: first the arguments
// they answer for — the canonical bytes whose digest the approval carries, in full — and
// only then what the agent chose (the call's name, the tool, the session), each value on
// one line (display.Line), so that nothing the agent wrote can pose as the arguments.
func formatApprovalRequest(call *v1alpha1.ToolCall, now time.Time) string {
	tool := call.Spec.Tool
	if t := call.Status.Tool; t != nil {
		tool = fmt.Sprintf("%s (%s %s, %s)", call.Spec.Tool, t.Kind, t.Name, registeredIn(t))
	}
	rows := [][]string{
		{"Call:", call.Name + " in namespace " + call.Namespace},
		{"Tool:", tool},
		{"Requester:", call.Spec.Requester},
		{"Session:", orNone(call.Spec.Session)},
		{"Asked because:", conditionMessage(call, v1alpha1.ConditionAdmitted, "a policy asks for approval")},
	}
	if d := call.Status.ApprovalDeadline; d != nil {
		rows = append(rows, []string{"Deadline:", fmt.Sprintf("%s (in %s)", d.UTC().Format(time.RFC3339), formatOffset(d.Sub(now)))})
	}
	return canonicalArguments(call) + fieldList(rows, "")
}

// wholeLine shows text on one line, never cut: an approver sees all of what they answer for.
var wholeLine = display.Options{}

// canonicalArguments is the arguments section of the approval request: the canonical JSON
// (check has made sure its digest is status.argumentsDigest) with the digest.
func canonicalArguments(call *v1alpha1.ToolCall) string {
	frozen, err := pipeline.Freeze(call.Spec.Arguments.Raw, pipeline.FreezeOptions{})
	if err != nil {
		return fmt.Sprintf("Arguments (not canonical JSON: %s; status digest %s):\n  %s\n",
			display.Line(err.Error()), orNone(call.Status.ArgumentsDigest), wholeLine.String(string(call.Spec.Arguments.Raw)))
	}
	return "Arguments (canonical JSON, " + call.Status.ArgumentsDigest + "):\n  " + wholeLine.String(frozen.String()) + "\n"
}
