package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/pkg/agentclient"
	"github.com/toolgate/toolgate/pkg/display"
)

type cancelOptions struct {
	f       *Factory
	wait    bool
	timeout time.Duration
}

func newCancelCommand(f *Factory) *cobra.Command {
	o := &cancelOptions{f: f}
	cmd := &cobra.Command{
		Use:   "cancel CALL",
		Short: "Cancel a call: its Job is stopped and it ends Failed, reason Cancelled",
		Long: `Cancel a call: sets spec.cancel on the ToolCall, as you. The operator stops its Job (the
Pod goes with it) and ends the call Failed with an isError result, reason Cancelled, frozen
like any other result; the ToolCall stays until retention removes it. A call awaiting
approval or queued behind its session ends the same way, without running.

Only the call's requester, or a user granted the verb "cancel" on toolcalls (the
toolgate-approver role), may cancel it (the toolgate-cancel admission policy). A call that
already ended keeps its result: there is nothing to cancel.`,
		Example: "  toolgate cancel sleep-x7k2p --wait",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait until the call has ended")
	cmd.Flags().DurationVar(&o.timeout, "timeout", time.Minute, "with --wait, how long to wait")
	return cmd
}

func (o *cancelOptions) run(ctx context.Context, name string) error {
	c, err := o.f.AgentClient(ctx)
	if err != nil {
		return err
	}
	call, err := c.Get(ctx, name)
	if err != nil {
		return explain(err, apiOp{verb: "get", resource: "toolcalls.toolgate.dev", namespace: c.Namespace})
	}
	if agentclient.Done(call) {
		return Exitf(ExitFailure, "call %s already ended %s (%s): its result stays, there is nothing to cancel",
			name, call.Status.Phase, call.Status.Result.Reason)
	}
	if _, err := c.Cancel(ctx, name); err != nil {
		return explain(err, apiOp{verb: "cancel", resource: "toolcalls.toolgate.dev", namespace: c.Namespace})
	}
	fprintf(o.f.IO.Out, "Cancelled call %s as %s.\n", name, display.Line(c.Identity))
	if !o.wait {
		return nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	last, err := c.Wait(waitCtx, name, agentclient.Done, nil)
	if err != nil {
		if waitCtx.Err() != nil && ctx.Err() == nil {
			return Exitf(ExitTimeout, "call %s has not ended after %s", name, o.timeout)
		}
		return explain(err, apiOp{verb: "watch", resource: "toolcalls.toolgate.dev", namespace: c.Namespace})
	}
	fprintf(o.f.IO.Out, "%s\n", endedLine(last.Name, string(last.Status.Phase), last.Status.Result.Reason))
	return nil
}

// endedLine says how a call ended: "call c ended Failed (Cancelled)".
func endedLine(name, phase, reason string) string {
	return display.Line(fmt.Sprintf("call %s ended %s (%s)", name, phase, reason))
}
