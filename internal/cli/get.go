package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/toolgate/toolgate/api/v1alpha1"
)

type getOptions struct {
	f      *Factory
	output string
}

func newGetCommand(f *Factory) *cobra.Command {
	o := &getOptions{f: f}
	cmd := &cobra.Command{
		Use:   "get [CALL]",
		Short: "List ToolCalls, or show one: NAME TOOL PHASE VERDICT DURATION AGE",
		Example: `  toolgate get
  toolgate get echo-x7k2p -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args)
		},
	}
	addOutputFlag(cmd, &o.output, outputText, outputWide, outputJSON, outputYAML)
	return cmd
}

func (o *getOptions) run(ctx context.Context, args []string) error {
	if err := checkOutput(o.output, outputText, outputWide, outputJSON, outputYAML); err != nil {
		return err
	}
	c, err := o.f.AgentClient(ctx)
	if err != nil {
		return err
	}
	var calls []v1alpha1.ToolCall
	if len(args) == 1 {
		call, err := c.Get(ctx, args[0])
		if err != nil {
			return explain(err, apiOp{verb: "get", resource: "toolcalls.toolgate.dev", namespace: c.Namespace})
		}
		if o.output == outputJSON || o.output == outputYAML {
			return printValue(o.f.IO.Out, o.output, withTypeMeta(call))
		}
		calls = []v1alpha1.ToolCall{*call}
	} else {
		list := &v1alpha1.ToolCallList{}
		if err := c.C.List(ctx, list, client.InNamespace(c.Namespace)); err != nil {
			return explain(err, apiOp{verb: "list", resource: "toolcalls.toolgate.dev", namespace: c.Namespace})
		}
		calls = list.Items
	}
	switch {
	case o.output == outputJSON || o.output == outputYAML:
		return printValue(o.f.IO.Out, o.output, callList(calls))
	case len(calls) == 0:
		fprintf(o.f.IO.ErrOut, "No ToolCalls found in namespace %q.\n", c.Namespace)
		return nil
	}
	fprintf(o.f.IO.Out, "%s", callTable(calls, time.Now(), o.output == outputWide))
	return nil
}
