package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/toolgate/toolgate/pkg/display"
)

// commands are toolgate's subcommands, in help order. A new command is one more entry: a
// func(*Factory) *cobra.Command in its own file of this package.
var commands = []func(*Factory) *cobra.Command{
	newCallCommand,
	newGetCommand,
	newDescribeCommand,
	newLogsCommand,
	newApproveCommand,
	newDenyCommand,
	newToolsCommand,
	newCancelCommand,
	newMCPCommand,
	newConsoleCommand,
	newVersionCommand,
}

// NewRootCommand builds the toolgate command with its subcommands, writing to streams.
// It behaves the same whatever the binary is called (toolgate, kubectl-toolgate).
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	f := NewFactory(streams)
	root := &cobra.Command{
		Use:   "toolgate",
		Short: "Run tools through toolgate: call, approve, inspect",
		Long: "toolgate creates ToolCalls, follows them through toolgate's pipeline and prints their\n" +
			"results; approvers answer calls awaiting approval. Also usable as `kubectl toolgate`.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return Usagef("%w\nSee '%s --help'.", err, cmd.CommandPath())
	})
	f.Flags.AddFlags(root.PersistentFlags())
	for _, newCommand := range commands {
		root.AddCommand(newCommand(f))
	}
	classifyRunErrors(root)
	return root
}

// Execute runs the toolgate command with args and returns its exit code, having printed
// any error to streams.ErrOut.
func Execute(ctx context.Context, args []string, streams genericiooptions.IOStreams) int {
	logRuntimeTo(streams.ErrOut)
	root := NewRootCommand(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	// Errors that did not come out of a command's RunE are cobra's: unknown commands,
	// wrong argument counts.
	code := ExitUsage
	var exit *ExitError
	if errors.As(err, &exit) {
		code = exit.Code
		if exit.Err == nil {
			return code
		}
	}
	// An error may quote what an agent, a tool or the API server wrote.
	fprintf(streams.ErrOut, "error: %s\n", display.Text(err.Error()))
	return code
}

// classifyRunErrors gives every error a RunE returns its exit code (ExitCodeOf).
func classifyRunErrors(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			var exit *ExitError
			if err == nil || errors.As(err, &exit) {
				return err
			}
			return &ExitError{Code: ExitCodeOf(err), Err: err}
		}
	}
	for _, sub := range cmd.Commands() {
		classifyRunErrors(sub)
	}
}
